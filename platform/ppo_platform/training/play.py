"""Watch, film or export a trained policy: the run's own files, its env rebuilt from its
stored spec the way evaluation builds it.

Only a run this platform home created is loaded (`resume.owned_run`): its final model (or, if
it never finished, its last checkpoint) and the normalization statistics beside it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from ppo_platform.envs.build import build_play_env, eval_seed
from ppo_platform.envs.faults import FRAME_KEY
from ppo_platform.errors import BadInputError, PlatformError, RunNotFoundError, SpecIssue
from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training.algorithms import load_model
from ppo_platform.training.resume import RecordedFolder, check_own_files, owned_run
from ppo_platform.training.video import VideoWriter, fps_of

MAX_EPISODES = 100
PLAY_ANYWHERE = ("policy.device=auto",)  # a run trained on `cuda` plays where there is none
MAX_STEPS = 1_000_000  # an env without a time limit must not play forever
MAX_VIDEO_STEPS = 20_000  # frames of one video (11 minutes at 30 fps): bounded disk
FrameSink = Callable[[np.ndarray], None]


@dataclass(frozen=True)
class TrainedRun:
    """A run's policy files, found in its own folder."""

    run_id: str
    run_dir: Path
    spec: ExperimentSpec
    model: Path
    normalize: Path | None
    final: bool  # False: the last checkpoint of a run that did not finish


@dataclass(frozen=True)
class Episode:
    reward: float  # the env's own reward, not normalized
    length: int


def trained_run(
    settings: Settings, run_id: str, recorded: RecordedFolder | None = None
) -> TrainedRun:
    """The run's final model, or its last checkpoint; RunNotFoundError if it has neither.
    Playing or exporting needs no GPU, whatever the run trained on: its spec's `policy.device`
    is read as `auto` (a CNN on a GPU when there is one, else the CPU)."""
    run_dir, spec = owned_run(settings, run_id, recorded, PLAY_ANYWHERE)
    final = run_dir / "final" / "model.zip"
    if final.is_file():
        stats: Path | None = final.with_name("vecnormalize.pkl")
        model, finished = final, True
    else:
        last = ckpt.latest_checkpoint(run_dir / "checkpoints")
        if last is None:
            raise RunNotFoundError(f"run {run_id} has no model yet (no checkpoint was saved).")
        model, stats, finished = last.model, last.normalize, False
    stats = stats if stats is not None and stats.exists() else None
    if spec.env.normalize.obs and stats is None:
        raise RunNotFoundError(
            f"run {run_id} normalizes observations but its statistics are missing beside "
            f"{model.name}; the policy cannot be played without them."
        )
    check_own_files(run_id, run_dir, [model] + ([stats] if stats else []))
    return TrainedRun(run_id, run_dir, spec, model, stats, finished)


def _filming_env(spec: ExperimentSpec, normalize: Path | None, render_mode: str | None) -> VecEnv:
    if render_mode == "rgb_array":  # drawn off-screen: SDL (pygame) must not look for a display
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    return build_play_env(spec, eval_seed(spec), normalize, render_mode)


def load_policy(run: TrainedRun, render_mode: str | None = None) -> tuple[BaseAlgorithm, VecEnv]:
    """The trained model on one fresh env of the run's spec (seeded as evaluation seeds)."""
    env = _filming_env(run.spec, run.normalize, render_mode)
    model = load_model(run.spec, str(run.model), env)
    env.seed(eval_seed(run.spec))  # loading seeded it with the training seed
    return model, env


def play(
    model: BaseAlgorithm,
    env: VecEnv,
    episodes: int,
    *,
    deterministic: bool = True,
    on_frame: FrameSink | None = None,
    max_steps: int = MAX_STEPS,
) -> list[Episode]:
    """Play `episodes` episodes (fewer if `max_steps` env steps run out) on a one-env VecEnv;
    `on_frame` gets every rendered frame, the first one after the reset included."""
    played: list[Episode] = []
    observation = env.reset()
    starts = np.ones((1,), dtype=bool)
    state = None
    if on_frame:
        on_frame(_frame(env))
    for _ in range(max_steps):
        action, state = model.predict(
            observation,  # type: ignore[arg-type]
            state=state,
            episode_start=starts,
            deterministic=deterministic,
        )
        observation, _, dones, infos = env.step(action)
        starts = dones
        if on_frame:  # the frame after the step: the terminal one too, before the reset
            kept = infos[0].get(FRAME_KEY)
            on_frame(np.asarray(kept) if kept is not None else _frame(env))
        if dones[0]:
            finished = infos[0].get("episode", {})
            played.append(Episode(float(finished.get("r", np.nan)), int(finished.get("l", 0))))
            if len(played) >= episodes:
                break
            if on_frame:  # the next episode's first frame
                on_frame(_frame(env))
    return played


def _frame(env: VecEnv) -> np.ndarray:
    from gymnasium.error import DependencyNotInstalled

    try:
        frame = env.get_images()[0]
    except DependencyNotInstalled as error:  # e.g. classic control draws with pygame
        raise _not_filmable(env, f"cannot render: {error}") from error
    except NotImplementedError as error:  # gymnasium.Env.render's default: no message
        raise _not_filmable(
            env,
            "has no render() of its own (gymnasium's default raises NotImplementedError), "
            "so it cannot be filmed.",
        ) from error
    if frame is None:
        raise _not_filmable(env, "renders no rgb_array frames, so it cannot be filmed.")
    return np.asarray(frame)


def _not_filmable(env: VecEnv, message: str) -> BadInputError:
    spec = env.get_attr("spec")[0]
    return BadInputError(
        [
            SpecIssue(
                "env.id",
                message,
                spec.id if spec else None,
                fix="install the video extra (pip install 'ppo-platform[video]', it brings "
                "pygame for classic control), or play without a video.",
            )
        ]
    )


def record(
    model: BaseAlgorithm, env: VecEnv, path: Path, episodes: int, deterministic: bool = True
) -> list[Episode]:
    """`play`, every frame written to the MP4 file `path` at the env's frame rate (at most
    MAX_VIDEO_STEPS steps: an episode cut there is not counted)."""
    metadata = env.get_attr("metadata")[0] or {}
    with VideoWriter(path, fps_of(metadata)) as video:
        return play(
            model,
            env,
            episodes,
            deterministic=deterministic,
            on_frame=video.add,
            max_steps=MAX_VIDEO_STEPS,
        )


def video_name(episode: int) -> str:
    """File name of an evaluation video (unique among a run's artifacts)."""
    return f"evaluation-episode-{episode}.mp4"


def record_evaluation_videos(
    model: BaseAlgorithm, spec: ExperimentSpec, normalize: Path | None, folder: Path
) -> list[Path]:
    """`evaluation.video` episodes of `model`, one MP4 each, on an env built as evaluation
    builds it (seeded like it, observations normalized with `normalize`)."""
    env = _filming_env(spec, normalize, "rgb_array")
    paths = []
    try:
        for episode in range(1, spec.evaluation.video + 1):
            path = folder / video_name(episode)
            record(model, env, path, 1, spec.evaluation.deterministic)
            paths.append(path)
    finally:
        env.close()
    return paths


def evaluation_videos(
    model: BaseAlgorithm, spec: ExperimentSpec, normalize: Path | None, folder: Path
) -> list[Path]:
    """`record_evaluation_videos` for a finishing run: a video that cannot be made (the env
    cannot render here) is said on stderr, and the trained run is not lost for it."""
    try:
        return record_evaluation_videos(model, spec, normalize, folder)
    except Exception as error:  # whatever the env raises: the trained run is kept
        print(
            f"warning: evaluation.video: no video recorded: {why_no_video(error)}", file=sys.stderr
        )
        return []


def why_no_video(error: BaseException) -> str:
    """The reason a video could not be made, never empty."""
    if isinstance(error, PlatformError):
        return str(error)
    if isinstance(error, TypeError) and "render_mode" in str(error):
        return (
            f"the env takes no render_mode argument, so it cannot render frames to film ({error})."
        )
    return f"{type(error).__name__}: {error}" if str(error).strip() else type(error).__name__
