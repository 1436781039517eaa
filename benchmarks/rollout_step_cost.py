"""CPU per rollout step of specs/halfcheetah_cleanrl.yaml (1 env), by component, in one process.

- env step, normalized: over EnvPool's pool (the platform's `LeanVecNormalize`), stock SB3's
  `VecNormalize(DummyVecEnv)`, and the platform's `LeanVecNormalize(LeanDummyVecEnv)` (what
  `auto` picks for one MuJoCo env);
- policy forward: SB3's `ActorCriticPolicy.forward` and `trainers.fast.manual`'s, one observation;
- whole step: `collect_rollouts` of the model the platform builds, per env step.

CPU time (process user + sys: EnvPool's worker thread included), one torch thread, alternating
rounds, medians with min-max; the 1-min load is printed. Read under load as ratios.

    python benchmarks/rollout_step_cost.py --steps 2048 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]

from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize  # noqa: E402

from ppo_platform.spec.loader import load_spec  # noqa: E402
from ppo_platform.training.algorithms import build_model  # noqa: E402
from ppo_platform.training.environments import build_train_env  # noqa: E402
from trainers.fast.manual import ManualLoss  # noqa: E402

SPEC = ROOT / "specs" / "halfcheetah_cleanrl.yaml"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def env_step(vectorization: str) -> Callable[[int], None]:
    if vectorization == "stock dummy":
        spec = load_spec(SPEC, ["env.vectorization=dummy"])
        lean = build_train_env(spec)
        assert isinstance(lean, VecNormalize)
        envs = lean.venv.envs  # type: ignore[attr-defined]
        env = VecNormalize(DummyVecEnv([lambda env=env: env for env in envs]), gamma=0.99)
    else:
        env = build_train_env(load_spec(SPEC, [f"env.vectorization={vectorization}"]))
    env.reset()
    action = np.zeros((1, *env.action_space.shape), np.float32)  # type: ignore[misc]

    def run(steps: int) -> None:
        for _ in range(steps):
            env.step(action)

    return run


def forwards() -> dict[str, Callable[[int], None]]:
    spec = load_spec(SPEC, ["env.vectorization=dummy"])
    policy = build_model(spec, build_train_env(spec)).policy
    manual = ManualLoss.build(policy)
    assert manual is not None
    obs = torch.randn(1, 17, dtype=torch.float64)

    def run(forward: Callable) -> Callable[[int], None]:
        def steps(n: int) -> None:
            with torch.inference_mode():
                for _ in range(n):
                    forward(obs)

        return steps

    return {"policy forward: SB3": run(policy), "policy forward: manual": run(manual.forward)}


def whole_step() -> Callable[[int], None]:
    spec = load_spec(SPEC, [])
    model = build_model(spec, build_train_env(spec))
    _, callback = model._setup_learn(total_timesteps=10**6, callback=None)

    def run(steps: int) -> None:
        model.collect_rollouts(model.env, callback, model.rollout_buffer, steps)  # type: ignore[arg-type]

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2048, help="steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    parts = {f"env step: {v}": env_step(v) for v in ("envpool", "stock dummy", "dummy")}
    parts.update(forwards())
    parts["collect_rollouts, per step"] = whole_step()
    samples: dict[str, list[float]] = {name: [] for name in parts}
    for run in parts.values():
        run(64)  # warm-up
    for round_ in range(args.rounds):
        for name in parts if round_ % 2 == 0 else reversed(list(parts)):
            started = cpu_seconds()
            parts[name](args.steps)
            samples[name].append(1e6 * (cpu_seconds() - started) / args.steps)
    for name, values in samples.items():
        print(
            f"{name:28} {statistics.median(values):7.1f} us CPU "
            f"({min(values):.1f}-{max(values):.1f}, {args.rounds} rounds)"
        )
    print(f"1-min load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
