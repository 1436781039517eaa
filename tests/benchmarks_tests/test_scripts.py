"""Every benchmark script imports and answers --help; scripts run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.harness.scripts import GROUPS, help_failure, scripts

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    path = os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)])
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


def _module(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_benchmark_script_imports_and_answers_help():
    done = _module("benchmarks.harness.scripts")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["failed"] == {}
    assert "benchmarks.overhead.whole_process" in found["checked"]
    assert len(found["checked"]) >= 20


def test_the_script_list_covers_every_module_with_a_main_block():
    listed = set(scripts())
    for group in GROUPS:
        for path in (REPO_ROOT / "benchmarks" / group).glob("*.py"):
            if "__main__" in path.read_text():
                assert f"benchmarks.{group}.{path.stem}" in listed


def test_no_script_outside_a_group_folder():
    loose = [p.name for p in (REPO_ROOT / "benchmarks").glob("*.py") if p.name != "__init__.py"]
    assert loose == []


def test_a_script_that_cannot_import_is_reported():
    failure = help_failure("benchmarks.overhead.no_such_script")
    assert failure is not None and "ImportError" in failure


def test_alert_thresholds_refuses_a_home_without_a_store_before_mlflow_creates_one(tmp_path):
    nowhere = tmp_path / "nowhere"
    done = _module("benchmarks.learning.alert_thresholds", "--run", str(nowhere), "0" * 32)
    assert done.returncode == 1
    assert "no mlflow.db" in done.stderr
    assert not nowhere.exists()


def _se_run(env: str, variant: str, seed: int, final: float, budget: int = 100_000) -> dict:
    return {
        "env": env,
        "variant": variant,
        "seed": seed,
        "budget": budget,
        "threshold": -100.0,
        "spec": f"{env}-{variant}.yaml",
        "final_mean": final,
        "final_std": 1.0,
        "evaluations": [[10_000, final]],
        "steps_to_threshold": 10_000 if final >= -100 else None,
        "wall_s": 10.0,
        "load1_at_start": 1.0,
    }


def _se_report(command: str, commit: str, envs: list[str], runs: list[dict]) -> dict:
    machine = {"date_utc": "2026-12-01 08:00:00", "git_commit": commit, "cpu": "cpu"}
    machine.update(cores=2, python="3.11", uptime_before="load average: 1.0")
    return {
        "command": command,
        "machine": machine,
        "versions": {"gymnasium": "1.4.0"},
        "envs": envs,
        "seeds": 3,
        "runs": runs,
        "shared": {env: False for env in envs},
        "skipped": {},
    }


def test_sample_efficiency_folds_a_parallel_part_and_its_table_shows_every_env(tmp_path):
    out = tmp_path / "results"
    base = [_se_run("Acrobot-v1", "zoo", s, -80.0) for s in range(3)]
    base += [_se_run("Acrobot-v1", "planner", s, -110.0) for s in range(3)]
    envs = ["Acrobot-v1", "MountainCar-v0"]
    out.with_suffix(".json").write_text(json.dumps(_se_report("first", "aaaaaaa", envs, base)))
    part = [_se_run("Acrobot-v1", "planner", s, -82.0) for s in range(3)]
    part += [_se_run("MountainCar-v0", "zoo", s, -200.0, budget=50_000) for s in range(3)]
    part_file = tmp_path / "part.json"
    part_file.write_text(json.dumps(_se_report("part", "bbbbbbb", envs, part)))
    done = _module(
        "benchmarks.learning.sample_efficiency", "--out", str(out), "--merge-from", str(part_file)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    table = out.with_suffix(".md").read_text()
    assert (
        "| Acrobot-v1 | planner | 100,000 | IQM -82.0 [-82.0, -82.0] (95% CI, 3 seeds); "
        "mean -82.0 +- 0.0 (-82.0, -82.0, -82.0) | 3/3 |"
    ) in table
    assert "| MountainCar-v0 | planner | 100,000 | not run |" in table
    assert (
        "| MountainCar-v0 | zoo | 50,000 | IQM -200.0 [-200.0, -200.0] (95% CI, 3 seeds)" in table
    )
    assert "- `first` (2026-12-01 08:00:00 UTC, commit aaaaaaa)" in table
    assert "(folded in from part.json)" in table
    assert "| MountainCar-v0 | -110 (gymnasium reward_threshold) | 1,000,000 | 50,000 |" in table


def test_tune_fresh_seeds_refuses_seeds_the_study_used_and_a_summary_without_a_solve_rate(
    tmp_path,
):
    done = _module("benchmarks.learning.tune_fresh_seeds", "--seeds", "1000", "105", "2")
    assert done.returncode == 1
    assert "--seeds [2, 105]: the study used these" in done.stderr  # searched 0-2, held out 100+
    (tmp_path / "summary.json").write_text(
        json.dumps({"study": "s", "best_trial": 3, "verification": [{"number": 3, "solved": None}]})
    )
    done = _module("benchmarks.learning.tune_fresh_seeds", "--study-dir", str(tmp_path))
    assert done.returncode == 1
    assert "no held-out solve rate for its chosen trial" in done.stderr
