"""REST API start-up: process start -> /healthz answers, and -> /readyz answers 200 (the job
store is open and migrated, the dispatcher runs), for one or more source trees.

    PYTHONPATH=platform:. python -m benchmarks.service.api_startup [--rounds 5] [--tree DIR ...]

Whole processes (`python -m ppo_platform.cli serve`, a fresh home each time); with several
trees the rounds alternate between them (A B A B ...), so a change of the machine's load hits
both alike. Reports medians with min-max and the load average beside them, and writes
benchmarks/results/api_startup.md (and .json).
"""

from __future__ import annotations

import argparse
import signal
import tempfile
from pathlib import Path

from benchmarks.harness import (
    ROOT,
    alternate,
    cell,
    command_line,
    header,
    machine,
    summary,
    write_results,
)
from benchmarks.harness.services import api_server


def one_start(tree: Path) -> dict[str, float]:
    """Seconds from process start to /healthz and to /readyz answering 200."""
    process, _, healthz, readyz = api_server(Path(tempfile.mkdtemp(prefix="api-startup-")), tree)
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    return {"healthz": healthz, "readyz": readyz}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="Starts per tree.")
    parser.add_argument(
        "--tree", type=Path, action="append", help="Source tree(s) to start (default: this one)."
    )
    parser.add_argument("--label", action="append", help="A label per --tree.")
    args = parser.parse_args()
    trees = args.tree or [ROOT]
    labels = args.label or [str(tree) for tree in trees]
    variants = {
        label: lambda _, t=tree: one_start(t.resolve())
        for tree, label in zip(trees, labels, strict=True)
    }
    report = {
        "command": command_line("benchmarks.service.api_startup"),
        "machine": machine(),
        "runs": alternate(variants, args.rounds, warmup=False, order="round_robin"),
    }
    write_results(report, "api_startup", markdown)


def markdown(report: dict) -> str:
    runs = report["runs"]
    lines = [
        *header("REST API start-up", report),
        "",
        "Seconds from process start to the first 200 of each route; median (min-max) over the "
        "rounds, trees alternating.",
        "",
        "| tree | /healthz s | /readyz s | load average (1 min) at the starts |",
        "|---|---:|---:|---|",
    ]
    for label, starts in runs.items():
        loads = [s["load1_at_start"] for s in starts]
        lines.append(
            f"| {label} | {cell(summary(s['healthz'] for s in starts))} | "
            f"{cell(summary(s['readyz'] for s in starts))} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
