"""benchmarks/sample_efficiency.py: subsets of the table merge into the results (no training)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import sample_efficiency

        yield sample_efficiency
    finally:
        sys.path.remove(str(BENCHMARKS))


def _run(env: str, variant: str, seed: int, final: float, budget: int = 100_000) -> dict:
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


def _report(command: str, commit: str, envs: list[str], runs: list[dict]) -> dict:
    machine = {
        "date_utc": "2026-12-01 08:00:00",
        "git_commit": commit,
        "cpu": "cpu",
        "cores": 2,
        "python": "3.11",
        "uptime_before": "load average: 1.0",
    }
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


def test_merge_replaces_only_the_runs_a_subset_re_runs(bench, tmp_path):
    old = [_run("Acrobot-v1", "planner", s, -110.0) for s in range(3)]
    old += [_run("Acrobot-v1", "zoo", s, -80.0) for s in range(3)]
    previous = _report("python benchmarks/sample_efficiency.py", "aaaaaaa", ["Acrobot-v1"], old)
    (tmp_path / "results.json").write_text(json.dumps(previous))
    jobs = [
        {"env": "Acrobot-v1", "variant": "planner", "seed": s, "budget": 100_000} for s in range(3)
    ]
    new = _report("... --envs Acrobot-v1 --variants planner --merge", "bbbbbbb", ["Acrobot-v1"], [])
    report = bench.merged(new, tmp_path / "results.json", jobs)
    assert [(r["variant"], r["final_mean"]) for r in report["runs"]] == [("zoo", -80.0)] * 3
    assert [c["commit"] for c in report["commands"]] == ["aaaaaaa", "bbbbbbb"]


def test_fold_merges_a_parallel_part_and_the_table_shows_every_env(bench, tmp_path):
    out = tmp_path / "results"
    base = [_run("Acrobot-v1", "zoo", s, -80.0) for s in range(3)]
    base += [_run("Acrobot-v1", "planner", s, -110.0) for s in range(3)]
    out.with_suffix(".json").write_text(
        json.dumps(_report("first", "aaaaaaa", ["Acrobot-v1", "MountainCar-v0"], base))
    )
    part = [_run("Acrobot-v1", "planner", s, -82.0) for s in range(3)]
    part += [_run("MountainCar-v0", "zoo", s, -200.0, budget=50_000) for s in range(3)]
    part_file = tmp_path / "part.json"
    part_file.write_text(
        json.dumps(_report("part", "bbbbbbb", ["Acrobot-v1", "MountainCar-v0"], part))
    )
    bench.fold(out, [part_file])
    table = out.with_suffix(".md").read_text()
    assert "| Acrobot-v1 | planner | 100,000 | -82.0 +- 0.0 (-82.0, -82.0, -82.0) | 3/3 |" in table
    assert "| MountainCar-v0 | planner | 100,000 | not run |" in table
    assert "| MountainCar-v0 | zoo | 50,000 | -200.0 +- 0.0" in table
    assert "- `first` (2026-12-01 08:00:00 UTC, commit aaaaaaa)" in table
    assert "(folded in from part.json)" in table
    assert "| MountainCar-v0 | -110 (gymnasium reward_threshold) | 1,000,000 | 50,000 |" in table


def test_a_run_at_another_budget_is_kept_beside_the_same_seed(bench, tmp_path):
    old = [_run("Acrobot-v1", "planner", 0, -110.0)]
    previous = _report("python benchmarks/sample_efficiency.py", "aaaaaaa", ["Acrobot-v1"], old)
    (tmp_path / "results.json").write_text(json.dumps(previous))
    jobs = [{"env": "Acrobot-v1", "variant": "planner", "seed": 0, "budget": 1_000_000}]
    new = _report("... --budget 1000000 --merge", "bbbbbbb", ["Acrobot-v1"], [])
    report = bench.merged(new, tmp_path / "results.json", jobs)
    assert [(r["budget"], r["final_mean"]) for r in report["runs"]] == [(100_000, -110.0)]
