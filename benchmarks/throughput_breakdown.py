"""Where the CPU of a whole `ppo-platform run` goes, component by component.

Runs `run_spec` on a spec with `--set` overrides (default: cleanrl_ab.py's throughput row,
CartPole-v1, 64 envs x 32 steps, K 4, 4 minibatches of 512, evaluation off) in a fresh child
process, one thread (OMP_NUM_THREADS=1), with CPU timers (`time.thread_time`, the training
thread's own CPU) around the methods the time goes to: the rollout (env step, policy forward,
SB3's buffer), the update (loss and gradients, clip + Adam, post-update KL, the metrics read
back), the update listener (rows, diagnostics). Timers nest: a component's figure includes the
components inside it (the autograd path's `MinibatchStep.__call__` includes its `with_grads`).
Also: the training process's whole CPU (user + sys, all threads: EnvPool's workers count
only there) and its tracking process's (from /proc, just before it exits).

    python benchmarks/throughput_breakdown.py                      # the throughput row, 1M
    python benchmarks/throughput_breakdown.py --steps 200000 --set env.vectorization=envpool
    python benchmarks/throughput_breakdown.py --spec specs/breakout_cleanrl.yaml --steps 8192
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
THROUGHPUT = [
    "evaluation.every_timesteps=0",
    "evaluation.episodes=1",
    "env.n_envs=64",
    "update.epochs=4",
    "update.minibatch_size=512",
]
# (label, module, qualified name): wrapped with a CPU timer when the module has it.
TIMED = [
    ("learn", "stable_baselines3.common.on_policy_algorithm", "OnPolicyAlgorithm.learn"),
    ("rollout (collect_rollouts)", "trainers.fast.algorithm", "FastPathsMixin.collect_rollouts"),
    ("  env step: adapter + env (native)", "trainers.vector", "NativeVecEnv.step_wait"),
    ("    env: CartPoleVectorEnv.step", "gymnasium.envs.classic_control.cartpole",
     "CartPoleVectorEnv.step"),
    ("  env step: adapter + env (envpool)", "trainers.envpool", "EnvPoolVecEnv.step_wait"),
    ("  env step: adapter + env (dummy)", "stable_baselines3.common.vec_env.dummy_vec_env",
     "DummyVecEnv.step_wait"),
    ("  policy forward (manual)", "trainers.fast.manual", "ManualLoss.forward"),
    ("  policy forward (autograd path)", "stable_baselines3.common.policies",
     "ActorCriticPolicy.forward"),
    ("  rollout buffer add", "stable_baselines3.common.buffers", "RolloutBuffer.add"),
    ("  GAE (compute_returns_and_advantage)", "stable_baselines3.common.buffers",
     "RolloutBuffer.compute_returns_and_advantage"),
    ("  callbacks (on_step)", "stable_baselines3.common.callbacks", "BaseCallback.on_step"),
    ("update (train)", "trainers.fast.algorithm", "FastPathsMixin.train"),
    ("  rollout as tensors", "trainers.fast.rollout_buffer", "RolloutTensors.__init__"),
    ("  minibatch loss + gradients", "trainers.ppo", "ClipPPO._minibatch"),
    ("    manual loss + gradients", "trainers.fast.manual", "ManualLoss.__call__"),
    ("  clip + Adam (with_grads)", "trainers.fast.optimizer_step", "MinibatchStep.with_grads"),
    ("  autograd backward + clip + Adam", "trainers.fast.optimizer_step",
     "MinibatchStep.__call__"),
    ("  post-update KL", "trainers.ppo", "ClipPPO._post_update_kl"),
    ("  metrics read back", "trainers.ppo", "_UpdateRecord.read"),
    ("update listener (rows, diagnostics)", "ppo_platform.training.runner",
     "TrainingSession.on_update"),
]  # fmt: skip


def _timed(function: Callable, totals: dict, counts: dict, label: str) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.thread_time()
        try:
            return function(*args, **kwargs)
        finally:
            totals[label] += time.thread_time() - started
            counts[label] += 1

    return wrapper


def install_timers(totals: dict, counts: dict) -> None:
    for label, module_name, qualname in TIMED:
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            continue
        *path, name = qualname.split(".")
        for part in path:
            owner = getattr(owner, part, None)
        if owner is not None and name in vars(owner):
            setattr(owner, name, _timed(vars(owner)[name], totals, counts, label))


def child_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + sys) of `pid`'s live child processes, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_text().replace("\0", " ").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found[int(entry.name)] = (command, (int(fields[11]) + int(fields[12])) / tick)
    return found


def measure(spec: str, overrides: list[str]) -> dict:
    """In this process: one run with timers; the figures as a dict."""
    started_wall, started = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    sys.path[:0] = [str(ROOT / "platform"), str(ROOT)]
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.tracking.process import shared_tracking_process
    from ppo_platform.training.runner import run_spec

    totals: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    install_timers(totals, counts)
    imported = time.thread_time()
    run_spec(load_spec(ROOT / spec, overrides))
    children = child_cpu(os.getpid())  # the tracking process, before it is closed
    shared_tracking_process().close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "spec": spec,
        "overrides": overrides,
        "wall_s": time.perf_counter() - started_wall,
        "training_process_cpu_s": usage.ru_utime + usage.ru_stime,
        "imports_cpu_s": imported,
        "started_cpu_s": started.ru_utime + started.ru_stime,
        "children_cpu_s": {command[:80]: cpu for command, cpu in children.values()},
        "components_cpu_s": {label: totals[label] for label, *_ in TIMED if label in totals},
        "calls": {label: counts[label] for label, *_ in TIMED if label in counts},
    }


def report(figures: dict, steps: int) -> str:
    lines = [f"wall {figures['wall_s']:.2f} s (in the child, from before imports)"]
    lines.append(f"training process CPU {figures['training_process_cpu_s']:.2f} s "
                 f"(imports before run_spec: {figures['imports_cpu_s']:.2f} s)")  # fmt: skip
    for command, cpu in figures["children_cpu_s"].items():
        lines.append(f"child process CPU {cpu:.2f} s: {command}")
    lines.append(f"{'component (thread CPU, nested)':44} {'s':>7} {'us/env step':>12} {'calls':>8}")
    for label, cpu in figures["components_cpu_s"].items():
        calls = figures["calls"][label]
        lines.append(f"{label:44} {cpu:7.2f} {cpu / steps * 1e6:12.2f} {calls:8d}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="specs/cartpole.yaml")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--set", action="append", default=None, help="override (repeatable)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    sets = THROUGHPUT if args.spec == "specs/cartpole.yaml" else []
    overrides = [*sets, *(args.set or []), f"budget.total_timesteps={args.steps}"]
    if args.child:
        print(json.dumps(measure(args.spec, overrides)))
        return
    load = os.getloadavg()[0]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--child", "--spec", args.spec, "--steps", str(args.steps)]
    command += [a for s in args.set or [] for a in ("--set", s)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(done.stderr[-3000:])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    figures["load1_at_start"], figures["load1_at_end"] = load, os.getloadavg()[0]
    print(report(figures, args.steps))
    print(f"1-min load {load:.2f} at start, {figures['load1_at_end']:.2f} at end")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
