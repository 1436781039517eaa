"""Per-member overhead in one worker process: what a sweep member or tuning trial pays beyond
plain SB3 once the worker is warm.

A sweep or tuning worker is one long-lived process that trains members in a row; it keeps its
imports and its tracking process (`tracking/remote.py`'s `shared_tracking_process`). This times,
in one process, alternating pairs (plain SB3 build + learn, then `run_spec` of the same
hyperparameters with evaluation off), after one warm-up of each; wall and CPU (this process's
own, so the tracking process's work is not counted: it runs beside training), medians with
min-max. specs/cartpole.yaml's values, one torch thread.

    python -m benchmarks.overhead.member_overhead --steps 2048 --pairs 5
"""

from __future__ import annotations

import argparse
import os
import tempfile

from benchmarks.harness import (
    alternate,
    command_line,
    live_children_cpu_s,
    load1,
    machine,
    summarize,
    summary,
    timed,
    write_results,
)
from benchmarks.overhead.in_process import plain_run, platform_run


def with_tracking(call) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """`timed(call)` and the CPU its tracking process (this process's child) spent meanwhile."""
    before = live_children_cpu_s()
    figures = timed(call)
    return {**figures, "tracking_cpu_s": live_children_cpu_s() - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2048)
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    os.environ["PPO_PLATFORM_HOME"] = tempfile.mkdtemp(prefix="member-overhead-")
    from ppo_platform.execution.threads import pin_threads

    pin_threads(1)
    load_before = load1()
    first = {"plain": timed(lambda: plain_run(args.steps))}
    first["platform"] = with_tracking(lambda: platform_run(args.steps))
    variants = {
        "plain": lambda _: timed(lambda: plain_run(args.steps)),
        "platform": lambda _: with_tracking(lambda: platform_run(args.steps)),
    }
    samples = alternate(variants, args.pairs, warmup=False, order="round_robin")
    extra = {
        kind: [
            p[kind] - q[kind] for p, q in zip(samples["platform"], samples["plain"], strict=True)
        ]
        for kind in ("wall_s", "cpu_s")
    }
    loads = [load_before] + [s["load1_at_start"] for s in samples["platform"]]
    report = {
        "command": command_line("benchmarks.overhead.member_overhead"),
        "machine": machine(),
        "load1": summary(loads),
        "first_member_including_imports": first,
        "plain": summarize(samples["plain"], ("wall_s", "cpu_s")),
        "platform": summarize(samples["platform"], ("wall_s", "cpu_s", "tracking_cpu_s")),
        "extra_per_member": {k: summary(v) for k, v in extra.items()},
    }
    write_results(report, "member_overhead")


if __name__ == "__main__":
    main()
