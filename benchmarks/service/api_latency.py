"""REST API latency: submission and status p50/p99 at 1, 10 and 50 concurrent clients while
a training job runs, with the load beside every run, the server's CPU per submit+status pair,
where a submission's time goes (its Server-Timing header), and the server's start-up time.

    PYTHONPATH=platform:. python -m benchmarks.service.api_latency [--requests 200]
        [--clients 1,10,50] [--repeat 3] [--pin]

Whole processes over real HTTP on loopback: the server is `python -m ppo_platform.cli serve`
with a fresh home, started at nice 0 (as a user would, whatever this script's niceness); its
training job (a long GridWorld run) too. Submissions queue tiny GridWorld runs behind it (one
running experiment per key). Each level is measured `--repeat` times; with `--pin` every
measurement is followed by the same one with the server (and its intake workers) pinned to
core 0 and the training job's processes to core 1 (`taskset`), so the table shows how much of
the tail is the two competing for a core. Writes benchmarks/results/api_latency.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchmarks.harness import (
    ROOT,
    alternate,
    command_line,
    descendants,
    load1,
    machine,
    process_cpu_s,
    versions,
    write_results,
)
from benchmarks.harness.services import API_KEY, api_server
from benchmarks.service.load_client import Timings, run_clients

KEY = API_KEY
HEADERS = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}
SPEC = (
    "name: {name}\nenv: {{id: ppo_platform/GridWorld-v0, n_envs: 1}}\n"
    "rollout: {{n_steps: 64}}\nupdate: {{epochs: 2, minibatch_size: 64}}\n"
    "budget: {{total_timesteps: {steps}}}\n"
)


def start_server(
    home: Path, tree: Path, extra: dict[str, str]
) -> tuple[subprocess.Popen[bytes], str, float, float]:
    """The server process, its URL, and seconds until /healthz and /readyz answer."""
    return api_server(home, tree, extra)


def measure(url: str, clients: int, requests: int, job_id: str, tag: str) -> Timings:
    """`clients` connections at once (`load_client`), `requests` submissions (and status
    reads) in all."""
    per_client = max(1, requests // clients)
    specs = [
        [SPEC.format(name=f"bench-{tag}-{i}-{n}", steps=512).encode() for n in range(per_client)]
        for i in range(clients)
    ]
    parsed = urlsplit(url)
    return run_clients(parsed.hostname or "127.0.0.1", parsed.port or 80, KEY, specs, job_id)


PHASES = ("outside", "body", "intake-wait", "validate", "store", "render", "answer")


def breakdown(t: Timings) -> dict[str, dict[str, float]] | None:
    """Where submissions' time went, in ms, from their Server-Timing headers: the median of
    each phase over every submission, and its mean over the slowest 1% (those at or over the
    p99). 'outside' is the client's time less the route's: connection, HTTP parsing, waiting
    for the event loop, writing the answer. None for a server without the header."""
    timed = [
        (client, {**phases, "outside": client - phases["total"]})
        for client, phases in zip(t.submit, t.phases, strict=True)
        if "total" in phases
    ]
    if not timed:
        return None
    rows = [row for _, row in timed]
    slow_from = percentile([client for client, _ in timed], 0.99)
    slowest = [row for client, row in timed if client >= slow_from]
    return {
        "median": {p: statistics.median(r[p] for r in rows) for p in PHASES},
        "slowest_1pct": {p: statistics.fmean(r[p] for r in slowest) for p in PHASES},
    }


def lost_submissions(home: Path, accepted: list[str]) -> int:
    """How many accepted (202) submissions are not in the job store."""
    with sqlite3.connect(home / "jobs.db") as db:
        stored = {row[0] for row in db.execute("SELECT id FROM experiments")}
    return sum(1 for experiment_id in accepted if experiment_id not in stored)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_seconds(server: int, job: int) -> float:
    """User + system CPU of the server and its intake workers (every child but the training
    job's processes; the queued runs never start while the training job runs)."""
    skip = {job, *descendants(job)}
    return sum(process_cpu_s(p) for p in [server, *descendants(server)] if p not in skip)


def pin(pids: list[int], cores: str) -> None:
    for pid in pids:  # -a: every thread of the process
        subprocess.run(["taskset", "-a", "-p", "-c", cores, str(pid)], capture_output=True)


class Placement:
    """Server + intake workers on core 0 and the training job's processes on core 1, or all
    of them free on every core."""

    def __init__(self, server: int, job: int) -> None:
        self.server, self.job = server, job
        self.all_cores = f"0-{(os.cpu_count() or 1) - 1}"

    def apply(self, pinned: bool) -> None:
        job_tree = [self.job, *descendants(self.job)]
        rest = [p for p in [self.server, *descendants(self.server)] if p not in job_tree]
        pin(rest, "0" if pinned else self.all_cores)
        pin(job_tree, "1" if pinned else self.all_cores)


def job_pid(home: Path, job_id: str) -> int:
    with sqlite3.connect(home / "jobs.db") as db:
        return int(db.execute("SELECT pid FROM experiments WHERE id = ?", (job_id,)).fetchone()[0])


def start_training(url: str, home: Path) -> tuple[str, int]:
    """Submit the long training job and wait until it trains (its progress moves)."""
    training = httpx.post(
        f"{url}/v1/experiments",
        content=SPEC.format(name="background-training", steps=4_000_000),
        headers=HEADERS,
        timeout=60,
    ).json()["id"]
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        job = httpx.get(f"{url}/v1/experiments/{training}", headers=HEADERS, timeout=60).json()
        if job["status"] == "running" and job["progress"].get("timesteps", 0) > 0:
            time.sleep(2)
            return training, job_pid(home, training)
        time.sleep(0.2)
    raise TimeoutError("the training job did not start within 300 s")


def nice_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def run_level(
    url: str, home: Path, placement: Placement, job_id: str, clients: int, requests: int, tag: str
) -> dict:
    server, job = placement.server, placement.job
    cpu, api_cpu, load = cpu_seconds(server, job), process_cpu_s(server), load1()
    started = time.perf_counter()
    t = measure(url, clients, requests, job_id, tag)
    wall = time.perf_counter() - started
    n = len(t.submit)
    return {
        "clients": clients,
        "requests": n,
        "submit_p50": statistics.median(t.submit),
        "submit_p99": percentile(t.submit, 0.99),
        "status_p50": statistics.median(t.status),
        "status_p99": percentile(t.status, 0.99),
        "errors": len(t.errors),
        "error_examples": t.errors[:3],
        "lost": lost_submissions(home, t.accepted),
        "breakdown": breakdown(t),
        "pairs_per_s": n / wall,
        "server_cpu_ms_per_pair": (cpu_seconds(server, job) - cpu) * 1000 / n,
        "api_process_cpu_ms_per_pair": (process_cpu_s(server) - api_cpu) * 1000 / n,
        "load_before": load,
        "load_after": load1(),
    }


def session(
    args: argparse.Namespace, tree: Path, label: str, round_: int, tree_env: str
) -> list[dict]:
    """One server (from `tree`) with its training job: every level, free (and pinned)."""
    home = Path(tempfile.mkdtemp(prefix="api-bench-"))
    items = [*(args.server_env or []), *(i for i in tree_env.split(",") if "=" in i)]
    extra = dict(item.split("=", 1) for item in items)
    process, url, healthz, readyz = start_server(home, tree, extra)
    runs: list[dict[str, Any]] = []
    try:
        job_id, job = start_training(url, home)
        placement = Placement(process.pid, job)
        common = {
            "tree": label,
            "round": round_,
            "healthz_s": healthz,
            "readyz_s": readyz,
            "nice_server": nice_of(process.pid),
            "nice_job": nice_of(job),
        }
        for clients in [int(c) for c in args.clients.split(",")]:
            for pinned in (False, True) if args.pin else (False,):
                placement.apply(pinned)
                tag = f"{round_}-{clients}-{int(pinned)}"  # in spec names: no label
                row = run_level(url, home, placement, job_id, clients, args.requests, tag)
                runs.append({**common, **row, "pinned": pinned})
                print(json.dumps(runs[-1]), flush=True)
        placement.apply(False)
        httpx.post(f"{url}/v1/experiments/{job_id}/cancel", headers=HEADERS)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="Submissions per measurement.")
    parser.add_argument(
        "--clients", default="1,10,50", help="Concurrent client levels (connections)."
    )
    parser.add_argument("--repeat", type=int, default=3, help="Server sessions per tree.")
    parser.add_argument("--pin", action="store_true", help="Also measure pinned (see above).")
    parser.add_argument(
        "--tree", type=Path, action="append", help="Source tree(s) to serve (default: this one)."
    )
    parser.add_argument("--label", action="append", help="A label per --tree.")
    parser.add_argument(
        "--tree-env",
        action="append",
        help="Per --tree: NAME=VALUE[,NAME=VALUE] for that tree's server ('-' for none); "
        "the same tree twice with two settings compares them.",
    )
    parser.add_argument(
        "--out", default="api_latency", help="Results name in benchmarks/results/ (.md, .json)."
    )
    parser.add_argument(
        "--server-env", action="append", help="NAME=VALUE for the server (e.g. a setting)."
    )
    args = parser.parse_args()
    trees = [t.resolve() for t in args.tree or [ROOT]]
    labels = args.label or ["this tree" for _ in trees]
    tree_envs = args.tree_env or ["-" for _ in trees]
    variants = {  # the same tree may come twice (two settings): keyed by position
        f"{index}: {label}": lambda round_, t=tree, lb=label, e=env: {
            "runs": session(args, t, lb, round_, e)
        }
        for index, (tree, label, env) in enumerate(zip(trees, labels, tree_envs, strict=True))
    }
    sessions = alternate(variants, args.repeat, warmup=False, order="round_robin")
    runs = [
        run
        for round_ in range(args.repeat)
        for done in sessions.values()
        for run in done[round_]["runs"]
    ]
    report = {
        "command": command_line("benchmarks.service.api_latency"),
        "machine": machine(),
        "versions": versions("fastapi", "uvicorn", "sqlalchemy", "pydantic", "pyyaml"),
        "args": {k: str(v) for k, v in vars(args).items()},
        "runs": runs,
    }
    write_results(report, Path(args.out).name, partial(markdown, args))


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"


def summary_rows(runs: list[dict]) -> list[str]:
    """One row per tree, placement and client level: median (min-max) over the sessions."""
    lines = []
    for tree in dict.fromkeys(r["tree"] for r in runs):
        for pinned in sorted({r["pinned"] for r in runs}):
            for clients in sorted({r["clients"] for r in runs}):
                rows = [
                    r
                    for r in runs
                    if (r["tree"], r["pinned"], r["clients"]) == (tree, pinned, clients)
                ]
                loads = [r["load_before"] for r in rows] + [r["load_after"] for r in rows]
                cells = [
                    spread([r[key] for r in rows])
                    for key in ("submit_p50", "submit_p99", "status_p50", "status_p99")
                ]
                lines.append(
                    f"| {tree} | {'pinned' if pinned else 'free'} | {clients} | "
                    + " | ".join(cells)
                    + f" | {sum(r['errors'] for r in rows)} | {sum(r.get('lost', 0) for r in rows)}"
                    f" | {spread([r['server_cpu_ms_per_pair'] for r in rows])} | "
                    f"{spread([r.get('api_process_cpu_ms_per_pair', float('nan')) for r in rows])}"
                    f" | {spread([r.get('pairs_per_s', float('nan')) for r in rows])} | "
                    f"{min(loads):.1f}-{max(loads):.1f} |"
                )
    return lines


def breakdown_rows(runs: list[dict]) -> list[str]:
    """Where a submission's time goes, per tree and level: the median over the sessions."""
    lines = [
        "Where a submission's time goes, from each answer's `Server-Timing` header (ms; the "
        "median over the sessions of each session's median, and of its slowest 1%): "
        "'outside' is the client's time less the route's (the connection, HTTP parsing, "
        "waiting for the event loop, writing the answer).",
        "",
        f"| tree | clients | submissions | {' | '.join(PHASES)} |",
        "|---|---:|---|" + "---:|" * len(PHASES),
    ]
    for tree in dict.fromkeys(r["tree"] for r in runs):
        for clients in sorted({r["clients"] for r in runs}):
            rows = [
                r["breakdown"]
                for r in runs
                if (r["tree"], r["clients"], r["pinned"]) == (tree, clients, False)
                and r.get("breakdown")
            ]
            for which, label in (("median", "median"), ("slowest_1pct", "slowest 1%")):
                if rows:
                    cells = [statistics.median(b[which][p] for b in rows) for p in PHASES]
                    lines.append(
                        f"| {tree} | {clients} | {label} | "
                        + " | ".join(f"{c:.1f}" for c in cells)
                        + " |"
                    )
    return [*lines, ""] if len(lines) > 4 else []


def markdown(args: argparse.Namespace, report: dict) -> str:
    """The page; the notes below `NOTES` in the existing page are kept."""
    runs, m = report["runs"], report["machine"]
    versions_text = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    pin = " --pin" if args.pin else ""
    pin += "".join(f" --server-env {item}" for item in args.server_env or [])
    trees = "".join(
        f" --tree {t} --label '{label}'"
        for t, label in zip(args.tree or [], args.label or [], strict=False)
    )
    trees += "".join(f" --tree-env {e}" for e in args.tree_env or [])
    trees += f" --out {args.out}" if args.out != "api_latency" else ""
    lines = [
        "# REST API latency",
        "",
        f"`python -m benchmarks.service.api_latency --requests {args.requests} --clients "
        f"{args.clients} --repeat {args.repeat}{pin}{trees}`, {m['date_utc']} UTC, commit "
        f"{m['git_commit']}; {m['cores']} cores shared with other work, Python {m['python']}, "
        f"{versions_text}. While one "
        "GridWorld training job runs in the job service, each client (a keep-alive connection "
        "of one asyncio load generator, `benchmarks/service/load_client.py`) alternates POST "
        "/v1/experiments (a queued run) and GET /v1/experiments/{id} of the training job; "
        "milliseconds over real HTTP on loopback, from the first byte sent to the last byte "
        "read. 'lost': accepted (202) submissions missing from the job store afterwards. "
        "Server and training job at nice "
        f"{sorted({(r['nice_server'], r['nice_job']) for r in runs})} (server, job). 'pinned': "
        "server + intake workers on core 0, training job on core 1 (clients free). Trees "
        "alternate session by session (a fresh server and training job each).",
        "",
        f"Median (min-max) over the {args.repeat} sessions of each tree:",
        "",
        "| tree | placement | clients | submit p50 | submit p99 | status p50 | status p99 "
        "| errors | lost | server CPU ms per submit+status | of which the API process "
        "| submit+status pairs/s | load average (1 min) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *summary_rows(runs),
        "",
        *breakdown_rows(runs),
        "Server start-up, process start -> /healthz 200 and -> /readyz 200 (seconds):",
        "",
    ]
    for tree in dict.fromkeys(r["tree"] for r in runs):
        starts = {r["round"]: r for r in runs if r["tree"] == tree}.values()
        lines.append(
            f"- {tree}: /healthz {spread([r['healthz_s'] for r in starts])}, "
            f"/readyz {spread([r['readyz_s'] for r in starts])}"
        )
    lines += [
        "",
        "Every measurement, in order:",
        "",
        "| tree | session | placement | clients | submit p50 / p99 | status p50 / p99 "
        "| server CPU ms | load before, after |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['tree']} | {r['round']} | {'pinned' if r['pinned'] else 'free'} | "
            f"{r['clients']} | {r['submit_p50']:.1f} / {r['submit_p99']:.1f} | "
            f"{r['status_p50']:.1f} / {r['status_p99']:.1f} | "
            f"{r['server_cpu_ms_per_pair']:.2f} | {r['load_before']:.1f}, {r['load_after']:.1f} |"
        )
    out = ROOT / "benchmarks" / "results" / f"{Path(args.out).name}.md"
    notes = ""
    if out.exists() and NOTES in out.read_text():
        notes = out.read_text().split(NOTES, 1)[1]
    return "\n".join(lines) + "\n\n" + NOTES + notes


NOTES = "<!-- notes (kept when the script rewrites the results above) -->"

if __name__ == "__main__":
    main()
