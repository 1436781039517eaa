"""The GPU check's harness, on this machine's CPU: it refuses `cuda` where there is none
before training anything, and its CPU parts (a whole `ppo-platform run`, the run's fps and
resolved device, the model loaded where no GPU is visible) work end to end."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from benchmarks.throughput import gpu_check


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_without_a_gpu_it_says_so_and_trains_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.throughput.gpu_check", "--out", "never-written"],
        capture_output=True,
        text=True,
        cwd=gpu_check.ROOT,
    )
    assert done.returncode == 2
    assert "no CUDA device here" in done.stderr and "--devices cpu" in done.stderr
    assert not (gpu_check.ROOT / "benchmarks" / "results" / "never-written.json").exists()


def test_a_cpu_run_is_measured_and_its_model_loads_where_no_gpu_is_visible(
    tmp_path: Path,
) -> None:
    args = gpu_check.parse_args(["--devices", "cpu", "--specs", "cartpole"])
    args.cartpole_steps = 1024
    report = gpu_check.check(args, tmp_path)
    [row] = report["trained"]
    assert row["exit"] == 0, row["tail"]
    assert row["resolved_device"] == "cpu" and row["fps"] > 0
    assert 0 < row["steps_per_s_process"] < row["fps"]  # the process wall includes start-up
    assert report["loaded_on_cpu"] == []  # only GPU-trained models are loaded on the CPU
    loaded = gpu_check.load_on_cpu(row, tmp_path / "home", time.monotonic() + 120)
    assert loaded["plain_sb3_exit"] == 0 and '"device": "cpu"' in loaded["plain_sb3"][0]
    assert loaded["enjoy_exit"] == 0, loaded["enjoy"]
    page = gpu_check.render({**report, "command": "c", "cuda": gpu_check.cuda_state()})
    assert "| cartpole | cpu | cpu | cpu | 0 |" in page


@pytest.mark.parametrize(
    "argv", [["--devices", "tpu"], ["--specs", "pong"], ["--cartpole-steps", "0"]]
)
def test_bad_devices_specs_and_budgets_are_refused_before_anything_trains(
    argv: list[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        gpu_check.parse_args(argv)
    assert exit_.value.code == 2
