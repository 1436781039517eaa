"""The machine a result was measured on: CPU, cores, memory, load, commit, package versions."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PACKAGES = ("torch", "stable_baselines3", "gymnasium", "mlflow")


def load1() -> float:
    """The 1-min load average now."""
    return os.getloadavg()[0]


def load_averages() -> tuple[float, float, float]:
    """The 1-, 5- and 15-min load averages now."""
    return os.getloadavg()


def wait_for_quiet(threshold: float, limit_s: float = 300.0) -> float:
    """Waits (at most `limit_s`) until the 1-min load average is below `threshold`; returns it."""
    deadline = time.monotonic() + limit_s
    while load1() >= threshold and time.monotonic() < deadline:
        time.sleep(10)
    return load1()


def uptime() -> str:
    """`uptime`'s line: the time, the up time, the users and the three load averages."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    found = (line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    return next(found, platform.processor() or platform.machine())


def git_commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or os.environ.get("BENCH_COMMIT", "unknown (not a git checkout)")


def machine() -> dict[str, Any]:
    """CPU model, cores, memory, OS, Python, commit, the UTC date and `uptime` before the run."""
    meminfo = Path("/proc/meminfo")
    mem_kib = int(meminfo.read_text().split()[1]) if meminfo.exists() else 0
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kib / 2**20, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "git_commit": git_commit(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "uptime_before": uptime(),
    }


def machine_line(m: dict[str, Any]) -> str:
    """One line of markdown for `machine()`'s dict."""
    return (
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']}, "
        f"Python {m['python']}, commit {m['git_commit']}, {m['date_utc']} UTC."
    )


PROBE = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for n in sys.argv[1:]:\n"
    "    try: out[n] = m.version(n)\n"
    "    except m.PackageNotFoundError: out[n] = 'not installed'\n"
    "print(json.dumps(out))"
)


def package_versions(python: Path | str, names: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The installed versions of `names` in another interpreter (a tool's own venv)."""
    done = subprocess.run([str(python), "-c", PROBE, *names], capture_output=True, text=True)
    return json.loads(done.stdout) if done.returncode == 0 else {}


def versions(*names: str) -> dict[str, str]:
    """The installed versions of `names` (default: torch, SB3, gymnasium, MLflow) here."""
    import importlib.metadata as metadata

    found = {}
    for name in names or DEFAULT_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
