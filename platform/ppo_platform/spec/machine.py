"""What this machine can do for a spec: a CUDA GPU for `policy.device: cuda`, the video
encoder for `evaluation.video`. Checked at validation, like the memory and disk budgets.

Validation never imports torch (the API process must not): when torch is not loaded yet, one
child process asks it how many GPUs it sees, once per process, and only for a spec that asks
for `cuda`.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from functools import lru_cache

from ppo_platform.errors import SpecIssue
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec

MACHINE_RULE = "machine_capability"
VIDEO_MODULES = ("imageio", "imageio_ffmpeg")
VIDEO_EXTRA_FIX = "install the video extra: pip install 'ppo-platform[video]'"
_PROBE = "import torch, sys; sys.stdout.write(str(torch.cuda.device_count()))"
_PROBE_TIMEOUT = 60.0


@lru_cache(maxsize=1)
def cuda_device_count() -> int:
    """CUDA GPUs torch can use here (0 for a CPU build of torch or a machine without one)."""
    if "torch" in sys.modules:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=_PROBE_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return int(done.stdout) if done.returncode == 0 and done.stdout.isdigit() else 0


def missing_video_modules() -> list[str]:
    """The video extra's modules that are not installed (found without importing them)."""
    return [name for name in VIDEO_MODULES if importlib.util.find_spec(name) is None]


def device_issue(spec: ExperimentSpec, settings: Settings) -> SpecIssue | None:
    """`cuda` where torch sees no GPU. On a Ray cluster the run's task asks the cluster for a
    GPU instead (this machine is not where it runs)."""
    if spec.policy.device != "cuda" or settings.executor == "ray" or cuda_device_count() > 0:
        return None
    return SpecIssue(
        "policy.device",
        "refused: asks for a CUDA GPU, but torch sees none on this machine (no GPU, or a "
        "CPU-only build of torch).",
        "cuda",
        fix="use `auto` (a GPU when there is one, else the CPU) or `cpu`; or run where torch "
        "sees a GPU (a CUDA build of torch, CUDA_VISIBLE_DEVICES).",
        rule=MACHINE_RULE,
    )


def video_issue(spec: ExperimentSpec) -> SpecIssue | None:
    """`evaluation.video` without the encoder: refused now, not after the training."""
    missing = missing_video_modules() if spec.evaluation.video else []
    if not missing:
        return None
    return SpecIssue(
        "evaluation.video",
        f"refused: recording videos needs {' and '.join(missing)}, not installed here.",
        spec.evaluation.video,
        fix=f"{VIDEO_EXTRA_FIX}, or set evaluation.video to 0.",
        rule=MACHINE_RULE,
    )


def task_gpus(device: str | None) -> float:
    """GPUs a task must reserve for a run on `device` (`auto` takes a GPU only when it is
    given one: on Ray, through PPO_PLATFORM_RAY_NUM_GPUS)."""
    return 1.0 if device == "cuda" else 0.0


def machine_refusals(spec: ExperimentSpec, settings: Settings | None = None) -> list[SpecIssue]:
    """Every capability the spec asks of this machine and it lacks."""
    settings = settings or get_settings()
    found = (device_issue(spec, settings), video_issue(spec))
    return [issue for issue in found if issue is not None]
