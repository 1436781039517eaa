"""Throughput of our PPO update against stock stable-baselines3 PPO on the same spec.

Both trainers get the same hyperparameters (the spec through
`ppo_platform.training.algorithms.ppo_kwargs`), the same seed, the same environments and one
torch thread; repetitions alternate their order so that machine noise hits both alike.
Reported: median wall time of `learn()` and of the time spent inside `train()` (the update
itself), and the ratio to stock SB3.

    python -m benchmarks.throughput.trainer_throughput --timesteps 20000 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO

from benchmarks.harness import (
    ROOT,
    alternate,
    command_line,
    header,
    machine,
    timed,
    versions,
    write_results,
)
from ppo_platform.envs.build import build_train_env
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec
from ppo_platform.trainers.ppo import PlatformPPO
from ppo_platform.training.algorithms import policy_name, ppo_kl_kwargs, ppo_kwargs

STOCK = "stock SB3 PPO"
OURS = "ours: ppo (PlatformPPO)"
OURS_KL = "ours: ppo_kl (PlatformPPO, KLPenaltyObjective)"


def with_update_clock(cls: type[PPO]) -> type[PPO]:
    """`cls` whose train() adds its own wall time to `update_seconds`."""

    def train(self: Any) -> None:
        self.update_seconds += timed(lambda: cls.train(self))["wall_s"]

    return type(f"Timed{cls.__name__}", (cls,), {"train": train, "update_seconds": 0.0})


def stock_kwargs(spec: ExperimentSpec) -> dict[str, Any]:
    """`ppo_kwargs` without the platform's own (`kl_source`), which stock PPO does not take."""
    return {k: v for k, v in ppo_kwargs(spec).items() if k != "kl_source"}


TRAINERS: dict[str, tuple[type[PPO], Any]] = {
    STOCK: (with_update_clock(PPO), stock_kwargs),
    OURS: (with_update_clock(PlatformPPO), ppo_kwargs),
    OURS_KL: (with_update_clock(PlatformPPO), ppo_kl_kwargs),
}


def run_once(name: str, spec: ExperimentSpec, timesteps: int, params: dict) -> dict[str, float]:
    """One `learn`: its wall and CPU (this single-threaded process's: less sensitive to other
    jobs on the machine) and the wall inside `train()`; the final parameters into `params`."""
    np.random.seed(spec.budget.seed)
    cls, kwargs = TRAINERS[name]
    env = build_train_env(spec)
    model = cls(policy_name(env.observation_space), env, device="cpu", verbose=0, **kwargs(spec))
    learn = timed(lambda: model.learn(timesteps))
    params[name] = {k: v.clone() for k, v in model.policy.state_dict().items()}
    env.close()
    return {
        "learn_s": learn["wall_s"],
        "learn_cpu_s": learn["cpu_s"],
        "update_s": model.update_seconds,  # type: ignore[attr-defined]
    }


def max_param_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def render(report: dict) -> str:
    results, timesteps = report["samples"], report["timesteps"]

    def median(name: str, key: str) -> float:
        return statistics.median(sample[key] for sample in results[name])

    rows = []
    for name in results:
        learn, update, cpu = (median(name, k) for k in ("learn_s", "update_s", "learn_cpu_s"))
        rows.append(
            f"| {name} | {learn:.2f} | {learn / median(STOCK, 'learn_s'):.3f} | {update:.2f} | "
            f"{update / median(STOCK, 'update_s'):.3f} | {cpu:.2f} | "
            f"{cpu / median(STOCK, 'learn_cpu_s'):.3f} | {timesteps / learn:,.0f} |"
        )
    per_run = "; ".join(
        f"{name}: " + ", ".join(f"{s['learn_s']:.2f}" for s in runs)
        for name, runs in results.items()
    )
    return "\n".join(
        [
            *header("Trainer throughput: our PPO update vs stock SB3 PPO", report),
            f"Load: before `{report['machine']['uptime_before']}`; after "
            f"`{report['uptime_after']}`; 1 torch thread.",
            "",
            f"Spec `{report['spec']}` hyperparameters, {timesteps:,} env steps, seed "
            f"{report['seed']}, {report['repeats']} alternating repetitions; "
            "medians. `update` is the time inside `train()` (the K epochs of minibatch steps); "
            "`learn` adds rollout collection (env steps + policy forward), identical code in both. "
            "`learn CPU s` is the process CPU time of `learn()`, steadier than wall time on a "
            "shared machine. Ratios are to stock SB3 (below 1: ours is faster).",
            "",
            "| trainer | learn s | learn ratio | update s | update ratio | learn CPU s | CPU ratio "
            "| env steps/s |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Largest parameter difference between stock SB3 and ours after the whole run: "
            f"{report['max_param_difference']:.3g} (same seed, same rollouts: the update is the "
            "same computation).",
            "",
            f"Per-run seconds (learn): {per_run}",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/cartpole.yaml")
    parser.add_argument("--timesteps", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-kl", action="store_true", help="Skip the ppo_kl row.")
    parser.add_argument("--out", default="trainer_throughput", help="results file stem")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    spec = load_spec(ROOT / args.spec)
    names = [STOCK, OURS] if args.no_kl else [STOCK, OURS, OURS_KL]
    params: dict[str, dict[str, torch.Tensor]] = {}
    variants = {name: lambda _, n=name: run_once(n, spec, args.timesteps, params) for name in names}
    report = {
        "command": command_line("benchmarks.throughput.trainer_throughput"),
        "machine": machine(),
        "versions": versions("torch", "stable_baselines3"),
        "spec": args.spec,
        "seed": spec.budget.seed,
        "timesteps": args.timesteps,
        "repeats": args.repeats,
        "samples": alternate(variants, args.repeats, warmup=False, order="rotate"),
        "max_param_difference": max_param_difference(params[STOCK], params[OURS]),
    }
    write_results(report, args.out, render)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
