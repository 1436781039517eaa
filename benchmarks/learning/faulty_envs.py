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
"""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

BASES = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1", "HalfCheetah-v5", "Hopper-v5")
SCALE = 1.0e4
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
}


def make(kind: str, base: str, **kwargs: Any) -> gym.Env:  # type: ignore[type-arg]
    """`Faulty<kind>-<base>`: the base env (its own time limit kept) wrapped in the fault."""
    return KINDS[kind](gym.make(base, **kwargs))


def env_id(kind: str, base: str) -> str:
    return f"Faulty{kind}-{base}"


def register() -> None:
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
