"""Per-step cost of the training loop: `ppo-platform`'s run beside the plain SB3 script's.

In one warm process, alternating pairs: the plain script's `PPO(...).learn(steps)` and
`run_spec` of specs/cartpole.yaml (evaluation and periodic checkpoints off), both under
cProfile with a CPU clock. Reports CPU microseconds per env step of `learn` (rollout collection,
callbacks and update together) and of the platform's own hooks inside it (the update
listener: metric rows, diagnostics monitor, progress events; the evaluation and checkpoint
callbacks; handing rows to the tracking process). Medians with min-max; load recorded.

    python benchmarks/per_step_cost.py --steps 20000 --pairs 3
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "platform"), str(ROOT), str(ROOT / "benchmarks")]

from in_process import platform_run, summary  # noqa: E402

# (file suffix, function name) of what is ours inside `learn`, and of `learn` itself.
HOOKS = {
    "learn": ("on_policy_algorithm.py", "learn"),
    "collect_rollouts": ("on_policy_algorithm.py", "collect_rollouts"),
    "update (train)": ("ppo.py", "train"),
    "update listener (on_update)": ("runner.py", "on_update"),
    "diagnostics monitor (check)": ("diagnostics.py", "check"),
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


def plain(steps: int) -> None:
    from plain_sb3_cartpole import train_plain

    train_plain(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    os.environ["PPO_PLATFORM_HOME"] = tempfile.mkdtemp(prefix="per-step-")
    from ppo_platform.execution.threads import pin_threads

    pin_threads(1)
    plain(512)  # warm-up: imports, first torch calls
    platform_run(512)
    samples: dict[str, list[dict[str, float]]] = {"plain": [], "platform": []}
    load = [os.getloadavg()[0]]
    for _ in range(args.pairs):
        samples["plain"].append(profiled(lambda: plain(args.steps)))
        samples["platform"].append(profiled(lambda: platform_run(args.steps)))
        load.append(os.getloadavg()[0])
    per_step = {
        tool: {
            name: summary([s[name] * 1e6 / args.steps for s in runs])
            for name in HOOKS
            if any(s[name] for s in runs)
        }
        for tool, runs in samples.items()
    }
    report = {
        "command": f"python benchmarks/per_step_cost.py --steps {args.steps} --pairs {args.pairs}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "load1": summary(load),
        "cpu_us_per_env_step_under_cprofile": per_step,
    }
    out = ROOT / "benchmarks" / "results" / "per_step_cost.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
