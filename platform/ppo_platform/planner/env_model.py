"""`EnvInfo`: what the planner knows about an environment (plain data, cached on disk)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ActionKind = Literal["discrete", "continuous", "multi_discrete", "multi_binary", "other"]
ObservationKind = Literal["vector", "image", "discrete", "dict", "other"]


@dataclass(frozen=True)
class EnvInfo:
    """What the planner needs to know about an environment."""

    env_id: str
    entry_point: str
    observation_kind: ObservationKind
    observation_shape: tuple[int, ...]
    observation_dtype: str
    observation_low: float | None  # smallest finite lower bound (None: unbounded or not a Box)
    observation_high: float | None  # largest finite upper bound
    smallest_finite_range: float | None  # narrowest finite half-width (e.g. 0.07 for a velocity)
    action_kind: ActionKind
    action_shape: tuple[int, ...]
    n_actions: int | None  # number of choices for a Discrete action space
    horizon: int | None  # max episode steps, when known
    horizon_source: str  # where `horizon` came from, for the plan's reasons
    reward_threshold: float | None
    # the same negative reward on every non-final step of random play (a time penalty: the
    # episode ends at a goal), probed by `reward_probe`; None if the rewards vary or are >= 0
    step_penalty: float | None = None

    @property
    def observation_description(self) -> str:
        shape = "x".join(str(n) for n in self.observation_shape) or "scalar"
        return f"{self.observation_kind} ({shape}, {self.observation_dtype})"

    @property
    def action_description(self) -> str:
        if self.action_kind == "discrete":
            return f"discrete ({self.n_actions} actions)"
        shape = "x".join(str(n) for n in self.action_shape)
        return f"{self.action_kind.replace('_', '-')} ({shape})"
