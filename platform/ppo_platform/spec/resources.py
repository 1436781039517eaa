"""What a spec will cost before it runs: memory (rollout buffer, networks, envs) and checkpoint
disk, estimated in microseconds from the spec alone and refused above the budget.

The estimates are deliberately simple upper-side sums of what SB3 allocates; they exist to
refuse specs that would exhaust the machine (a 12 GB rollout buffer, a GridWorld of 10^10
cells, a million checkpoints), not to predict a run's footprint to the megabyte. The budget
is `Settings.memory_budget_bytes` / `disk_budget_bytes`, by default half of this machine's
memory and half of the free disk under the platform home.
"""

from __future__ import annotations

import itertools
import math
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ppo_platform.errors import SpecIssue
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.experiment import ExperimentSpec

RESOURCE_RULE = "resource_budget"
FREQUENCY_RULE = "too_frequent"
FLOAT = 4  # SB3 stores rollouts and parameters as float32
BUFFER_SCALARS = 6  # reward, return, episode start, value, log-prob, advantage per transition
PROCESS_BASE = 400 * 2**20  # python + torch + SB3 + MLflow, before any data
GRIDWORLD = "ppo_platform/GridWorld-v0"
MAX_PER_ROLLOUT = 8  # evaluations or checkpoints per rollout


def known_observation_size(spec: ExperimentSpec) -> int | None:
    """Observation size known from the spec alone (our GridWorld: size x size one-hot)."""
    if spec.env.id == GRIDWORLD:
        size = spec.env.kwargs.get("size", 4)
        return int(size) ** 2 if isinstance(size, int) and not isinstance(size, bool) else None
    return None


@dataclass(frozen=True)
class Estimate:
    memory: int  # bytes
    disk: int  # bytes
    parts: dict[str, int]

    def describe(self) -> str:
        return ", ".join(f"{name} {human(size)}" for name, size in self.parts.items())


def human(n_bytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n_bytes < 1024 or unit == "TiB":
            return f"{n_bytes:.1f} {unit}" if unit != "B" else f"{int(n_bytes)} B"
        n_bytes /= 1024
    raise AssertionError("unreachable")


def _parameters(inputs: int, layers: list[int], outputs: int) -> int:
    sizes = [inputs, *layers, outputs]
    return sum(a * b + b for a, b in itertools.pairwise(sizes))


def estimate(spec: ExperimentSpec, observation_size: int = 1, action_size: int = 1) -> Estimate:
    """Memory and disk of one run of `spec` with these observation and action sizes."""
    transitions = spec.env.n_envs * spec.rollout.n_steps
    # The buffer is filled, then flattened into a second copy for the minibatches.
    buffer = 2 * transitions * (observation_size + action_size + BUFFER_SCALARS) * FLOAT
    layers = list(spec.policy.net_arch)
    params = _parameters(observation_size, layers, 2 * action_size)
    params += _parameters(observation_size, layers, 1)
    network = 4 * params * FLOAT  # weights, gradients, two Adam moments
    activations = 3 * 2 * spec.update.minibatch_size * (observation_size + sum(layers)) * FLOAT
    # Each env holds its spaces' bounds and observations; the VecEnv a few buffers more.
    envs = (spec.env.n_envs + 1) * observation_size * 6 * FLOAT
    checkpoint = 3 * params * FLOAT + 64 * 1024  # weights + Adam state, zip overhead
    if spec.env.normalize.obs:
        checkpoint += 4 * observation_size * 8  # running mean/var, float64
    periodic = spec.checkpoints.every_timesteps
    saved = spec.budget.total_timesteps // periodic if periodic else 0
    disk = (min(spec.checkpoints.keep_last, saved) + 3) * checkpoint  # + final, copy, artifact
    parts = {
        "rollout buffer": buffer,
        "networks": network + activations,
        "envs": envs,
        "process": PROCESS_BASE,
    }
    return Estimate(sum(parts.values()), disk, parts)


def _machine_memory() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # not POSIX: no budget from the machine
        return 2**62


_FREE_DISK_SECONDS = 2.0  # a service validates many specs a second: look at most this often
_free_disk_seen: dict[Path, tuple[float, int]] = {}


def _free_disk(folder: Path) -> int:
    seen = _free_disk_seen.get(folder)
    if seen is not None and time.monotonic() - seen[0] < _FREE_DISK_SECONDS:
        return seen[1]
    free = 2**62
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            free = shutil.disk_usage(candidate).free
            break
    _free_disk_seen[folder] = (time.monotonic(), free)
    return free


def budgets(settings: Settings | None = None) -> tuple[int, int]:
    """(memory, disk) budgets in bytes: the settings, or half of the machine's."""
    settings = settings or get_settings()
    memory = settings.memory_budget_bytes or _machine_memory() // 2
    disk = settings.disk_budget_bytes or _free_disk(settings.home) // 2
    return memory, disk


def frequency_refusals(spec: ExperimentSpec) -> list[SpecIssue]:
    """Evaluations and checkpoints (when set) at most MAX_PER_ROLLOUT times per rollout, and
    evaluation episodes that do not outnumber the training steps (either would make a run crawl
    or hang). Some slack below one per rollout: a tuning trial may grow the rollout."""
    rollout = spec.env.n_envs * spec.rollout.n_steps
    issues = []
    for section in ("evaluation", "checkpoints"):
        every = getattr(spec, section).every_timesteps
        # Defaults (10000 / 50000 steps) are left alone; a value written down is held to it.
        chosen = "every_timesteps" in getattr(spec, section).model_fields_set
        if chosen and 0 < every * MAX_PER_ROLLOUT < rollout:
            issues.append(
                SpecIssue(
                    f"{section}.every_timesteps",
                    f"refused: {rollout // every} times per rollout (N x T = {rollout} env "
                    f"steps); at most {MAX_PER_ROLLOUT}, and once per rollout is plenty.",
                    every,
                    fix=f"use 0 (only at the end) or at least {rollout} (one rollout).",
                    rule=FREQUENCY_RULE,
                )
            )
    every = spec.evaluation.every_timesteps
    evaluations = spec.budget.total_timesteps // every + 1 if every else 1
    counts = {"evaluation.episodes": spec.evaluation.episodes}
    if spec.tune is not None and spec.tune.verify is not None and spec.tune.verify.episodes:
        counts["tune.verify.episodes"] = spec.tune.verify.episodes  # the held-out runs'
    for path, episodes in counts.items():
        if evaluations * episodes > max(spec.budget.total_timesteps, 100):
            issues.append(
                SpecIssue(
                    path,
                    f"refused: {evaluations} evaluations x {episodes} episodes would play more "
                    f"episodes than the run trains env steps ({spec.budget.total_timesteps}).",
                    episodes,
                    fix="evaluate less often (evaluation.every_timesteps) or with fewer episodes.",
                    rule=FREQUENCY_RULE,
                )
            )
    return issues


def budget_refusals(
    spec: ExperimentSpec,
    observation_size: int | None = None,
    action_size: int = 1,
    settings: Settings | None = None,
) -> list[SpecIssue]:
    """The estimate against the budgets; an issue naming both when it does not fit."""
    size = observation_size or known_observation_size(spec) or 1
    found = estimate(spec, size, action_size)
    memory_budget, disk_budget = budgets(settings)
    issues = []
    if found.memory > memory_budget:
        issues.append(
            SpecIssue(
                "env",
                f"refused: the run would need about {human(found.memory)} of memory "
                f"({found.describe()}), over the budget of {human(memory_budget)}.",
                fix="use fewer envs (env.n_envs), a shorter rollout (rollout.n_steps), a "
                "smaller env or network; or raise PPO_PLATFORM_MEMORY_BUDGET_BYTES.",
                rule=RESOURCE_RULE,
            )
        )
    if found.disk > disk_budget:
        issues.append(
            SpecIssue(
                "checkpoints",
                f"refused: checkpoints would need about {human(found.disk)} of disk, over "
                f"the budget of {human(disk_budget)}.",
                fix="keep fewer checkpoints (checkpoints.keep_last) or save them less often; "
                "or raise PPO_PLATFORM_DISK_BUDGET_BYTES.",
                rule=RESOURCE_RULE,
            )
        )
    return issues


def resource_refusals(spec: ExperimentSpec) -> list[SpecIssue]:
    """Every resource refusal that the spec alone decides (validation runs these)."""
    return [*frequency_refusals(spec), *budget_refusals(spec)]


def observation_size_of(space: object) -> int:
    """Floats one observation takes in the rollout buffer (a one-hot for Discrete)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return sum(observation_size_of(s) for s in space.spaces.values())
    if isinstance(space, spaces.Discrete):
        return int(space.n)
    if isinstance(space, spaces.MultiDiscrete):
        return int(sum(space.nvec.flat))
    shape = getattr(space, "shape", None) or (1,)
    return math.prod(int(n) for n in shape)
