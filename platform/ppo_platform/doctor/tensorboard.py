"""Any PPO run: the scalars of a TensorBoard log folder written by stable-baselines3 or CleanRL,
read for the doctor (the optional `tensorboard` extra reads the event files).

What such logs cannot show is said in the diagnosis's `not_judged`: they hold no per-rollout
statistics of observations, rewards and actions, no spec (gamma, T, N, the learning rate's
start), no env exception, and SB3 logs the KL before each minibatch's step, not after the update.
"""

from __future__ import annotations

from pathlib import Path

from ppo_platform.doctor.engine import diagnose
from ppo_platform.doctor.series import Points
from ppo_platform.doctor.vocabulary import Diagnosis, NotJudged, RunFacts
from ppo_platform.errors import BadInputError, SpecIssue

EXTRA_HINT = 'pip install "ppo-platform[tensorboard]"'
# Which logger wrote a folder, told by a tag only it writes.
SOURCES = (("stable-baselines3", "train/approx_kl"), ("cleanrl", "losses/approx_kl"))
CRASH_UNSEEN = (
    "a TensorBoard log records no env exception: a crashed run shows only where its scalars stop"
)


def _bad(path: Path, message: str, fix: str) -> BadInputError:
    return BadInputError([SpecIssue("PATH", message, str(path), fix=fix)], "PATH")


def read_scalars(folder: Path) -> dict[str, Points]:
    """Every scalar tag of the event files under `folder` (all runs below it merged, each tag
    sorted by step). BadInputError without the extra or without event files."""
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        raise _bad(
            folder,
            "reading TensorBoard logs needs the optional `tensorboard` extra.",
            EXTRA_HINT,
        ) from None
    files = sorted(folder.rglob("events.out.tfevents.*")) if folder.is_dir() else []
    if not files:
        raise _bad(
            folder,
            "is not a folder of TensorBoard event files (events.out.tfevents.*).",
            "give the folder SB3's tensorboard_log or CleanRL's runs/<name> wrote.",
        )
    series: dict[str, Points] = {}
    for path in files:
        accumulator = EventAccumulator(str(path), size_guidance={"scalars": 0})
        accumulator.Reload()
        for name in accumulator.Tags().get("scalars", []):
            points = series.setdefault(name, [])
            points.extend((event.step, event.value) for event in accumulator.Scalars(name))
    return {name: sorted(points) for name, points in series.items()}


def logger_of(series: dict[str, Points]) -> str:
    for source, marker in SOURCES:
        if marker in series:
            return source
    return "tensorboard"


def diagnose_log_folder(folder: Path) -> tuple[Diagnosis, str]:
    """The diagnosis of a TensorBoard log folder, and which logger wrote it."""
    series = read_scalars(folder)
    source = logger_of(series)
    continuous = True if "train/std" in series else None
    diagnosis = diagnose(series, RunFacts(source=source, continuous=continuous))
    # What the rules could not judge names the missing metric; an env crash leaves none.
    crash = NotJudged("env_crash", CRASH_UNSEEN)
    return Diagnosis(
        diagnosis.causes, [*diagnosis.not_judged, crash], diagnosis.thin_evidence
    ), source
