"""REST API start-up: process start -> /healthz answers, and -> /readyz answers 200 (the job
store is open and migrated, the dispatcher runs), for one or more source trees.

    PYTHONPATH=platform:. python benchmarks/api_startup.py [--rounds 5] [--tree DIR ...]

Whole processes (`python -m ppo_platform.cli serve`, a fresh home each time); with several
trees the rounds alternate between them (A B A B ...), so a change of the machine's load hits
both alike. Reports medians with min-max and the load average beside them, and writes
benchmarks/results/api_startup.md (and .json).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(url: str, deadline: float, process: subprocess.Popen[bytes]) -> float:
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=0.5).status_code == 200:
                return time.perf_counter()
        except httpx.TransportError:
            pass
        time.sleep(0.01)
    raise TimeoutError(url)


def one_start(tree: Path) -> dict[str, float]:
    """Seconds from process start to /healthz and to /readyz answering 200."""
    home = Path(tempfile.mkdtemp(prefix="api-startup-"))
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree / "platform"), str(tree)]),
        "PPO_PLATFORM_HOME": str(home),
        "PPO_PLATFORM_API_KEYS": json.dumps({"bench": "bench-key-0123456789"}),
    }
    load = os.getloadavg()[0]
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(port)],
        env=env,
        cwd=tree,  # `python -m` puts the working directory first on sys.path
        stdout=subprocess.DEVNULL,
        stderr=(home / "server.log").open("wb"),
    )
    try:
        healthy = wait_until(f"http://127.0.0.1:{port}/healthz", started + 120, process)
        ready = wait_until(f"http://127.0.0.1:{port}/readyz", started + 120, process)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    return {"healthz": healthy - started, "readyz": ready - started, "load": load}


def summary(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


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
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in labels}
    for _ in range(args.rounds):
        for tree, label in zip(trees, labels, strict=True):
            runs[label].append(one_start(tree.resolve()))
    write_results(runs, args.rounds)


def write_results(runs: dict[str, list[dict[str, float]]], rounds: int) -> None:
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# REST API start-up",
        "",
        f"`python benchmarks/api_startup.py --rounds {rounds}`, {now}, {os.cpu_count()} cores "
        f"(shared), Python {platform.python_version()}. Seconds from process start to the first "
        "200 of each route; median (min-max) over the rounds, trees alternating.",
        "",
        "| tree | /healthz s | /readyz s | load average (1 min) at the starts |",
        "|---|---:|---:|---|",
    ]
    for label, starts in runs.items():
        loads = [s["load"] for s in starts]
        lines.append(
            f"| {label} | {summary([s['healthz'] for s in starts])} | "
            f"{summary([s['readyz'] for s in starts])} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    text = "\n".join(lines) + "\n"
    out = ROOT / "benchmarks" / "results" / "api_startup"
    out.with_suffix(".md").write_text(text)
    out.with_suffix(".json").write_text(json.dumps({"date": now, "runs": runs}, indent=1))
    print(text)


if __name__ == "__main__":
    main()
