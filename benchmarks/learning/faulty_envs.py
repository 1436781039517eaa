"""Envs with one documented fault planted, for the doctor's fault corpus
(benchmarks/learning/doctor_corpus.py; docs/guides/diagnostics.md, "How often is the doctor
right?"). An operator env package: name it with `--env-package benchmarks.learning.faulty_envs`
(or PPO_PLATFORM_ENV_PACKAGES); a spec only names the ids it registers,
`Faulty<Kind>-<Base>`, e.g. `FaultyNanObs-CartPole-v1`:

| kind | fault | from |
|---|---|---|
| NanObs | observation index `NAN_INDEX` is NaN | this env's step `ONSET_STEPS` |
| ObsScale | every observation x `SCALE` (the Box bounds too) | the first step |
| RewardScale | every reward x `SCALE` | the first step |
| StepRaises | `step()` raises `PlantedEnvError` | this env's step `ONSET_STEPS` |
| NanReward | the reward is NaN | this env's step `ONSET_STEPS` |
| ZeroReward | every reward is 0 (nothing to follow) | the first step |
| NarrowActions | the action Box is `NARROW` x the base's (most samples clipped) | the first step |

It also registers a user's plain Python envs, `Reach-v0` (continuous), `ReachDiscrete-v0` and
`Lock-v0` (a short combination lock with a decoy): the env family the doctor's thresholds were
never chosen on (its held-out part).
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

REACH = ("Reach-v0", "ReachDiscrete-v0")
BASES = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", "HalfCheetah-v5", "Hopper-v5", *REACH)
SCALE = 1.0e4
NARROW = 0.01
NAN_INDEX = 1
ONSET_STEPS = 200  # steps of one env (not of the vector) before a late fault appears


class PlantedEnvError(RuntimeError):
    """The exception the StepRaises envs raise: the env's own error the platform must report."""


class _Counted(gym.Wrapper):  # type: ignore[type-arg]
    """Counts this env's steps (over episodes) so a fault can start late."""

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.steps = 0

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        self.steps += 1
        return self.env.step(action)


class NanObs(_Counted):
    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if self.steps >= ONSET_STEPS:
            obs = np.array(obs, dtype=np.float64)
            obs[NAN_INDEX] = np.nan
        return obs, reward, terminated, truncated, info


class StepRaises(_Counted):
    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if self.steps + 1 >= ONSET_STEPS:
            raise PlantedEnvError(f"planted failure at this env's step {self.steps + 1}")
        return super().step(action)


class NanReward(_Counted):
    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, (np.nan if self.steps >= ONSET_STEPS else reward), terminated, truncated, info


class ZeroReward(gym.RewardWrapper):  # type: ignore[type-arg]
    def reward(self, reward: SupportsFloat) -> float:
        return 0.0


class NarrowActions(gym.ActionWrapper):  # type: ignore[type-arg]
    """The action Box shrunk to `NARROW` of the base's; actions pass through as they are."""

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        box = env.action_space
        assert isinstance(box, gym.spaces.Box), "NarrowActions needs a Box action space"
        self.action_space = gym.spaces.Box(box.low * NARROW, box.high * NARROW, dtype=box.dtype)

    def action(self, action: Any) -> Any:
        return action


class Reach(gym.Env):  # type: ignore[type-arg]
    """A user's plain Python env: move a point on [-1, 1] to a target; reward -distance.
    Observation (position, target - position); actions a push in [-1, 1] (or left/stay/right)."""

    def __init__(self, discrete: bool = False) -> None:
        self.observation_space = gym.spaces.Box(-2.0, 2.0, (2,), dtype=np.float32)
        self.action_space: gym.spaces.Space[Any] = (
            gym.spaces.Discrete(3) if discrete else gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        )
        self.discrete = discrete
        self.position = self.target = 0.0

    def _obs(self) -> np.ndarray:
        return np.array([self.position, self.target - self.position], dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.position, self.target = (float(x) for x in self.np_random.uniform(-1, 1, 2))
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        push = float(action) - 1.0 if self.discrete else float(np.asarray(action).reshape(-1)[0])
        self.position = float(np.clip(self.position + 0.1 * push, -1.0, 1.0))
        return self._obs(), -abs(self.target - self.position), False, False, {}


class Lock(gym.Env):  # type: ignore[type-arg]
    """A user's plain Python env: `stages` steps of a combination lock. Each step either cashes
    out (action 0: `decoy`, the episode ends) or goes on (action 1); going on past the last
    stage pays 1. Observation: the stage, one-hot. The optimal policy is deterministic."""

    def __init__(self, stages: int = 5, decoy: float = 0.1) -> None:
        self.stages, self.decoy = stages, decoy
        self.observation_space = gym.spaces.Box(0.0, 1.0, (stages,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.stage = 0

    def _obs(self) -> np.ndarray:
        return np.eye(self.stages, dtype=np.float32)[self.stage]

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.stage = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        if int(action) == 0:
            return self._obs(), self.decoy, True, False, {}
        if self.stage == self.stages - 1:
            return self._obs(), 1.0, True, False, {}
        self.stage += 1
        return self._obs(), 0.0, False, False, {}


class ObsScale(gym.ObservationWrapper):  # type: ignore[type-arg]
    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, gym.spaces.Box), "ObsScale needs a Box observation space"
        low, high = (np.asarray(b, dtype=np.float64) * SCALE for b in (box.low, box.high))
        self.observation_space = gym.spaces.Box(low, high, dtype=np.float64)

    def observation(self, observation: Any) -> Any:
        return np.asarray(observation, dtype=np.float64) * SCALE


class RewardScale(gym.RewardWrapper):  # type: ignore[type-arg]
    def reward(self, reward: SupportsFloat) -> float:
        return float(reward) * SCALE


KINDS: dict[str, type[gym.Wrapper]] = {  # type: ignore[type-arg]
    "NanObs": NanObs,
    "ObsScale": ObsScale,
    "RewardScale": RewardScale,
    "StepRaises": StepRaises,
    "NanReward": NanReward,
    "ZeroReward": ZeroReward,
    "NarrowActions": NarrowActions,
}


def make(kind: str, base: str, **kwargs: Any) -> gym.Env:  # type: ignore[type-arg]
    """`Faulty<kind>-<base>`: the base env (its own time limit kept) wrapped in the fault."""
    return KINDS[kind](gym.make(base, **kwargs))


def env_id(kind: str, base: str) -> str:
    return f"Faulty{kind}-{base}"


def register() -> None:
    if "Lock-v0" not in gym.registry:
        # The lock's author declares it solved at its best return (opening it pays 1.0), as
        # gymnasium's own envs declare theirs: the doctor reads this level, as any env's.
        gym.register("Lock-v0", entry_point=Lock, max_episode_steps=50, reward_threshold=1.0)
    for name, discrete in zip(REACH, (False, True), strict=True):
        if name not in gym.registry:
            gym.register(
                name, entry_point=Reach, kwargs={"discrete": discrete}, max_episode_steps=50
            )
    for kind in KINDS:
        for base in BASES:
            if env_id(kind, base) not in gym.registry:
                gym.register(
                    env_id(kind, base),
                    entry_point=f"{__name__}:make",
                    kwargs={"kind": kind, "base": base},
                    max_episode_steps=gym.spec(base).max_episode_steps,
                )


register()
