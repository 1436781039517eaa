"""Size the rollout batch N x T and how each update spends it: the numbers every rule shares.

The budget should buy enough updates (and, for continuous control, a rollout should cover whole
episodes); the batch splits into minibatches that divide it; K gives each rollout a similar
number of gradient steps. Never K > 30 (`rules.MAX_EPOCHS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ppo_platform.planner.env_info import EnvInfo
from ppo_platform.planner.reward_probe import penalty_rollout_steps
from ppo_platform.planner.use_cases import ATARI, CLASSIC, RLHF, UseCase
from ppo_platform.spec.rules import MAX_EPOCHS

GOOD_UPDATES = 100  # below this the plan warns: PPO usually needs ~100 updates to learn
GRADIENT_STEPS_PER_ROLLOUT = 20  # classic control: rl-zoo CartPole's 20 epochs x 1 minibatch
CLASSIC_MINIBATCH = 256


@dataclass(frozen=True)
class Basis:
    """What every derivation rule works from: env, budget, use case and the sized rollout."""

    info: EnvInfo
    budget: int
    case: UseCase
    n_envs: int
    steps: int
    rollout_notes: tuple[str, ...]  # how T was chosen, for the reason of rollout.n_steps
    minibatch: int
    epochs: int

    @property
    def batch(self) -> int:
        return self.n_envs * self.steps

    @property
    def minibatches(self) -> int:
        return self.batch // self.minibatch

    @property
    def updates(self) -> int:
        return math.ceil(self.budget / self.batch)


def fmt(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:g}"


def _pow2(x: float) -> int:
    """Nearest power of two in log space (250 -> 256, 750 -> 1024)."""
    return 2 ** max(0, round(math.log2(max(x, 1.0))))


def _rollout(info: EnvInfo, budget: int, case: UseCase) -> tuple[int, int, list[str]]:
    """N and T: N fixed by the use case, T sized by the budget and the episode horizon."""
    n = case.n_envs
    notes = []
    if case.min_steps == case.max_steps:
        return (
            n,
            case.min_steps,
            [case.rollout_reason or f"the seed's fixed rollout length for {case.name}"],
        )
    batch = _pow2(budget / case.target_updates) if case.target_updates else n * case.min_steps
    batch = min(max(batch, n * case.min_steps), case.max_batch, n * case.max_steps)
    steps = batch // n
    notes.append(
        f"{fmt(budget)} steps / ~{case.target_updates} updates = "
        f"{fmt(budget // case.target_updates)} transitions per rollout, rounded to a power "
        f"of two: {batch}"
    )
    if info.step_penalty is not None and case.gae_lambda is None:
        steps = _penalty_steps(info, budget, n, steps, case, notes)
    if case.cover_episodes and info.horizon and steps < info.horizon:
        longer = min(2 ** math.ceil(math.log2(info.horizon)), case.max_steps)
        if budget // (n * longer) >= GOOD_UPDATES // 2:
            steps = longer
            notes.append(
                f"raised to T = {steps} so each env's rollout holds a whole "
                f"{info.horizon}-step episode"
            )
    return n, steps, notes


def _penalty_steps(
    info: EnvInfo, budget: int, n: int, steps: int, case: UseCase, notes: list[str]
) -> int:
    """A time penalty: raise T so GAE(0.95) at gamma 0.99 fits, if ~50 updates stay affordable."""
    longer = min(penalty_rollout_steps(), case.max_steps)
    if steps >= longer or budget // (n * longer) < GOOD_UPDATES // 2:
        return steps
    notes.append(
        f"raised to T = {longer}: random play paid {info.step_penalty:g} on every step (a time "
        "penalty: the episode ends at a goal), so the credit for reaching it must travel back "
        "far; T = 128 lets GAE(0.95) at gamma 0.99 span ~17 steps, a sixth of the rollout"
    )
    return longer


def _minibatch(batch: int, case: UseCase) -> int:
    if case is CLASSIC or case is RLHF:
        return min(batch, CLASSIC_MINIBATCH)
    if case is ATARI:
        return batch // 4
    return max(64, batch // 32)  # continuous: many small steps, at most 32 per epoch


def _epochs(minibatches: int, case: UseCase) -> int:
    if case is ATARI or case is RLHF:
        return 4
    if case is CLASSIC:
        return min(20, max(4, round(GRADIENT_STEPS_PER_ROLLOUT / minibatches)))
    return 10


def size_rollout(info: EnvInfo, budget: int, case: UseCase) -> Basis:
    """N, T, the minibatch and K for this env, budget and use case."""
    n, steps, notes = _rollout(info, budget, case)
    minibatch = _minibatch(n * steps, case)
    epochs = min(_epochs(n * steps // minibatch, case), MAX_EPOCHS)
    return Basis(info, budget, case, n, steps, tuple(notes), minibatch, epochs)
