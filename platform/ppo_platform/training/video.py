"""MP4 files of rendered frames (the `video` extra: imageio and its ffmpeg binary).

Frames are written as they come, never held in memory. H.264 in yuv420p plays in browsers;
its frame sides must be even, so a frame with an odd side is padded by one pixel.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from ppo_platform.errors import BadInputError, SpecIssue

DEFAULT_FPS = 30
MAX_FPS = 240


def _imageio() -> Any:
    try:
        importlib.import_module("imageio_ffmpeg")
        return importlib.import_module("imageio.v2")
    except ImportError as error:
        raise BadInputError(
            [
                SpecIssue(
                    "video",
                    f"recording needs imageio and imageio-ffmpeg ({error.name} is missing).",
                    fix="install the video extra: pip install 'ppo-platform[video]'.",
                )
            ]
        ) from error


def fps_of(env_metadata: dict[str, Any]) -> int:
    """The env's own frame rate (`render_fps`), else 30."""
    fps = env_metadata.get("render_fps")
    return int(fps) if isinstance(fps, (int, float)) and 0 < fps <= MAX_FPS else DEFAULT_FPS


class VideoWriter:
    """`with VideoWriter(path, fps) as video: video.add(frame)` for each HxWx3 uint8 frame."""

    def __init__(self, path: Path, fps: int = DEFAULT_FPS) -> None:
        self.path, self.fps = path, fps
        self.frames = 0
        self._writer: Any = None

    def __enter__(self) -> VideoWriter:
        imageio = _imageio()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = imageio.get_writer(
            self.path, fps=self.fps, codec="libx264", macro_block_size=1, pixelformat="yuv420p"
        )
        return self

    def add(self, frame: np.ndarray) -> None:
        height, width = frame.shape[:2]
        if height % 2 or width % 2:
            frame = np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")
        self._writer.append_data(np.ascontiguousarray(frame, dtype=np.uint8))
        self.frames += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._writer.close()
        if error is not None:  # a half-written file is not a video
            self.path.unlink(missing_ok=True)
