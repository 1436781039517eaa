"""REST API latency: submission and status p50/p99 with 1, 10 and 50 concurrent clients while a
training job runs, and the server's start-up time (process start -> /healthz answers).

    PYTHONPATH=platform:. python benchmarks/api_latency.py [--requests 200]

Whole processes over real HTTP on loopback: the server is `python -m ppo_platform.cli serve`
with a fresh home. Submissions queue tiny GridWorld runs behind the training job (one running
experiment per key) and are cancelled at the end. Writes benchmarks/results/api_latency.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
KEY = "bench-key-0123456789"
SPEC = (
    "name: {name}\nenv: {{id: ppo_platform/GridWorld-v0, n_envs: 1}}\n"
    "rollout: {{n_steps: 64}}\nupdate: {{epochs: 2, minibatch_size: 64}}\n"
    "budget: {{total_timesteps: {steps}}}\n"
)


def start_server(home: Path, workers: int = 1) -> tuple[subprocess.Popen[bytes], str, float]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "platform"), str(ROOT)]),
        "PPO_PLATFORM_HOME": str(home),
        "PPO_PLATFORM_API_KEYS": json.dumps({"bench": KEY}),
        "PPO_PLATFORM_MAX_RUNNING": "1",
        "PPO_PLATFORM_MAX_QUEUED": "100000",
    }
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    command = [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while True:
        try:
            if httpx.get(f"{url}/healthz", timeout=0.5).status_code == 200:
                return process, url, time.perf_counter() - started
        except httpx.TransportError:
            time.sleep(0.02)


def client_session(url: str, label: str, per_client: int, job_id: str) -> dict[str, list[float]]:
    """One client: `per_client` times a submission then a status read; latencies in ms."""
    timings: dict[str, list[float]] = {"submit": [], "status": [], "errors": []}
    headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        for n in range(per_client):
            spec = SPEC.format(name=f"bench-{label}-{n}", steps=512)
            t0 = time.perf_counter()
            submitted = http.post("/v1/experiments", content=spec)
            t1 = time.perf_counter()
            status = http.get(f"/v1/experiments/{job_id}")
            t2 = time.perf_counter()
            timings["submit"].append((t1 - t0) * 1000)
            timings["status"].append((t2 - t1) * 1000)
            if submitted.status_code != 202 or status.status_code != 200:
                timings["errors"].append(1.0)
    return timings


def measure(
    url: str, clients: int, per_client: int, job_id: str, processes: bool = False
) -> dict[str, list[float]]:
    """`clients` clients at once: threads of this process, or (`processes`) one process each,
    as separate programs would be (threads also wait for this process's GIL)."""
    timings: dict[str, list[float]] = {"submit": [], "status": [], "errors": []}
    args = [(url, f"{clients}-{i}", per_client, job_id) for i in range(clients)]
    pool_type = ProcessPoolExecutor if processes else ThreadPoolExecutor
    with pool_type(max_workers=clients) as pool:
        futures = [pool.submit(client_session, *one) for one in args]
        for future in futures:
            for key, values in future.result().items():
                timings[key] += values
    return timings


def cpu_seconds(pid: int, workers: int) -> float:
    """User + system CPU time the server has used so far (Linux /proc). With --workers N the
    requests are served by uvicorn's worker processes, the server's children, so they count
    too; with one worker the children are job processes, which do not."""

    def own(one: str) -> float:
        try:
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    children: list[str] = []
    if workers > 1:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += (task / "children").read_text().split()
    return own(str(pid)) + sum(own(child) for child in children)


def load_average() -> float:
    return os.getloadavg()[0]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="Submissions per level.")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn worker processes.")
    parser.add_argument(
        "--client-processes", action="store_true", help="Each client in its own process."
    )
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="api-bench-"))
    process, url, startup = start_server(home, args.workers)
    rows = []
    try:
        headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/yaml"}
        training = httpx.post(
            f"{url}/v1/experiments",
            content=SPEC.format(name="background-training", steps=2_000_000),
            headers=headers,
        ).json()["id"]
        while (
            httpx.get(f"{url}/v1/experiments/{training}", headers=headers).json()["status"]
            != "running"
        ):
            time.sleep(0.2)
        time.sleep(8)  # the job process is past its imports and training
        for clients in (1, 10, 50):
            cpu, load = cpu_seconds(process.pid, args.workers), load_average()
            per_client = max(1, args.requests // clients)
            timings = measure(url, clients, per_client, training, args.client_processes)
            timings["server_cpu_ms"] = [(cpu_seconds(process.pid, args.workers) - cpu) * 1000]
            timings["load"] = [load, load_average()]
            rows.append((clients, timings))
        httpx.post(f"{url}/v1/experiments/{training}/cancel", headers=headers)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    write_results(startup, rows, args)


def write_results(startup: float, rows: list, args: argparse.Namespace) -> None:
    requests, workers = args.requests, args.workers
    mode = " --client-processes" if args.client_processes else ""
    lines = [
        "# REST API latency",
        "",
        f"`python benchmarks/api_latency.py --requests {requests} --workers {workers}{mode}` on "
        "this "
        "machine "
        f"({os.cpu_count()} cores), while one GridWorld training job runs in the job service. "
        "Each client alternates POST /v1/experiments (a queued run) and GET "
        "/v1/experiments/{id}; milliseconds over real HTTP on loopback.",
        "",
        f"Server start-up (process start -> /healthz answers): **{startup:.2f} s**",
        "",
        "| clients | requests | submit p50 | submit p99 | status p50 | status p99 | errors "
        "| server CPU ms per submit+status | load average before, after |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for clients, t in rows:
        lines.append(
            f"| {clients} | {len(t['submit'])} | {statistics.median(t['submit']):.1f} | "
            f"{percentile(t['submit'], 0.99):.1f} | {statistics.median(t['status']):.1f} | "
            f"{percentile(t['status'], 0.99):.1f} | {len(t['errors'])} | "
            f"{t['server_cpu_ms'][0] / len(t['submit']):.2f} | "
            f"{t['load'][0]:.1f}, {t['load'][1]:.1f} |"
        )
    text = "\n".join(lines) + "\n"
    out = ROOT / "benchmarks" / "results" / "api_latency.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
