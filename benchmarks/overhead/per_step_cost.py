"""Per-step cost of the training loop: `ppo-platform`'s run beside the plain SB3 script's.

In one warm process, alternating pairs: the plain script's `PPO(...).learn(steps)` and
`run_spec` of specs/cartpole.yaml (evaluation and periodic checkpoints off), both under
cProfile with a CPU clock. Reports CPU microseconds per env step of `learn` (rollout collection,
callbacks and update together) and of the platform's own hooks inside it (the update
listener: metric rows, diagnostics monitor, progress events; the evaluation and checkpoint
callbacks; handing rows to the tracking process). Medians with min-max; load recorded.

    python -m benchmarks.overhead.per_step_cost --steps 20000 --pairs 3
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time

from benchmarks.harness import alternate, command_line, machine, summary, write_results
from benchmarks.overhead.in_process import plain_run, platform_run

# (file suffix, function name) of what is ours inside `learn`, and of `learn` itself.
HOOKS = {
    "learn": ("on_policy_algorithm.py", "learn"),
    "collect_rollouts": ("on_policy_algorithm.py", "collect_rollouts"),
    "update (train)": ("ppo.py", "train"),
    "update listener (on_update)": ("runner.py", "on_update"),
    "diagnostics monitor (check)": ("monitor.py", "check"),
    "metric rows (log_metrics)": ("remote.py", "log_metrics"),
    "progress events (_event)": ("runner.py", "_event"),
    "callbacks (_on_step, eval + checkpoint)": ("callbacks.py", "_on_step"),
}


def profiled(call) -> dict[str, float]:  # type: ignore[no-untyped-def]
    profile = cProfile.Profile(time.process_time)
    profile.runcall(call)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    found: dict[str, float] = {}
    for name, (suffix, function) in HOOKS.items():
        found[name] = sum(
            row[3]
            for (path, _, func), row in stats.items()
            if path.endswith(suffix) and func == function
        )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    os.environ["PPO_PLATFORM_HOME"] = tempfile.mkdtemp(prefix="per-step-")
    from ppo_platform.execution.threads import pin_threads

    pin_threads(1)
    plain_run(512)  # warm-up: imports, first torch calls
    platform_run(512)
    variants = {
        "plain": lambda _: profiled(lambda: plain_run(args.steps)),
        "platform": lambda _: profiled(lambda: platform_run(args.steps)),
    }
    samples = alternate(variants, args.pairs, warmup=False, order="round_robin")
    load = [s["load1_at_start"] for runs in samples.values() for s in runs]
    per_step = {
        tool: {
            name: summary([s[name] * 1e6 / args.steps for s in runs])
            for name in HOOKS
            if any(s.get(name) for s in runs)
        }
        for tool, runs in samples.items()
    }
    report = {
        "command": command_line("benchmarks.overhead.per_step_cost"),
        "machine": machine(),
        "load1": summary(load),
        "cpu_us_per_env_step_under_cprofile": per_step,
    }
    write_results(report, "per_step_cost")


if __name__ == "__main__":
    main()
