"""Per-member overhead in one worker process: what a sweep member or tuning trial pays beyond
plain SB3 once the worker is warm.

A sweep or tuning worker is one long-lived process that trains members in a row; it keeps its
imports and its tracking process (`tracking/remote.py`'s `shared_tracking_process`). This times,
in one process, alternating pairs (plain SB3 build + learn, then `run_spec` of the same
hyperparameters with evaluation off), after one warm-up of each; wall and CPU (this process's
own, so the tracking process's work is not counted: it runs beside training), medians with
min-max. specs/cartpole.yaml's values, one torch thread.

    python benchmarks/member_overhead.py --steps 2048 --pairs 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
sys.path[:0] = [str(ROOT / "platform"), str(ROOT), str(ROOT / "benchmarks")]

from in_process import platform_run, summary  # noqa: E402


def tracking_cpu() -> float:
    """CPU seconds used so far by this process's tracking process (0 before it exists)."""
    from ppo_platform.tracking import remote

    if remote._process is None:
        return 0.0
    stat = Path(f"/proc/{remote._process.process.pid}/stat").read_text().rpartition(")")[2]
    fields = stat.split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(call) -> dict[str, float]:  # type: ignore[no-untyped-def]
    wall, cpu, tracking = time.perf_counter(), time.process_time(), tracking_cpu()
    call()
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "tracking_cpu": tracking_cpu() - tracking,
    }


def plain(steps: int) -> None:
    from plain_sb3_cartpole import train_plain

    train_plain(steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    os.environ["PPO_PLATFORM_HOME"] = tempfile.mkdtemp(prefix="member-overhead-")
    from ppo_platform.execution.threads import pin_threads

    pin_threads(1)
    load = [os.getloadavg()[0]]
    first = {"plain": timed(lambda: plain(args.steps))}
    first["platform"] = timed(lambda: platform_run(args.steps))
    samples: dict[str, list[dict[str, float]]] = {"plain": [], "platform": []}
    for _ in range(args.pairs):
        samples["plain"].append(timed(lambda: plain(args.steps)))
        samples["platform"].append(timed(lambda: platform_run(args.steps)))
        load.append(os.getloadavg()[0])
    extra = {
        kind: [
            p[kind] - q[kind] for p, q in zip(samples["platform"], samples["plain"], strict=True)
        ]
        for kind in ("wall", "cpu")
    }
    report = {
        "command": f"python benchmarks/member_overhead.py --steps {args.steps} "
        f"--pairs {args.pairs}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
        "load1": summary(load),
        "first_member_including_imports": first,
        "plain": {k: summary([s[k] for s in samples["plain"]]) for k in ("wall", "cpu")},
        "platform": {
            k: summary([s[k] for s in samples["platform"]]) for k in ("wall", "cpu", "tracking_cpu")
        },
        "extra_per_member": {k: summary(v) for k, v in extra.items()},
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "member_overhead.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
