"""benchmarks.harness: alternation, timing, the results file, merging a re-run subset."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.harness import (
    ProcessFailed,
    alternate,
    cell,
    merge_previous,
    run_process,
    summary,
    write_results,
)


def _recording(order: list[str]):
    def variant(name: str):
        def run(pair: int) -> dict[str, float]:
            order.append(f"{name}{pair}")
            return {"value": float(pair)}

        return run

    return variant


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("abba", ["a0", "b0", "a0", "b0", "b1", "a1", "a2", "b2"]),
        ("round_robin", ["a0", "b0", "a0", "b0", "a1", "b1", "a2", "b2"]),
    ],
)
def test_alternate_warms_up_then_interleaves_the_variants(kind, expected, capsys):
    order: list[str] = []
    variant = _recording(order)
    samples = alternate({"a": variant("a"), "b": variant("b")}, 3, order=kind)
    assert order == expected
    assert [s["value"] for s in samples["a"]] == [0.0, 1.0, 2.0]
    assert all("load1_at_start" in s for s in samples["b"])
    assert "pair 3 b" in capsys.readouterr().out


def test_rotate_puts_no_variant_always_first_and_settle_runs_before_each_sample():
    order: list[str] = []
    settled: list[int] = []
    variant = _recording(order)
    alternate(
        {n: variant(n) for n in "abc"},
        3,
        warmup=False,
        order="rotate",
        settle=lambda: settled.append(1),
    )
    assert order == ["a0", "b0", "c0", "b1", "c1", "a1", "c2", "a2", "b2"]
    assert len(settled) == 9


def test_alternate_refuses_an_unknown_order():
    with pytest.raises(ValueError, match="order='zigzag'"):
        alternate({"a": lambda _: {}}, 1, order="zigzag")


def test_summary_and_cell():
    stats = summary([3.0, 1.0, 2.0])
    assert stats == {"median": 2.0, "min": 1.0, "max": 3.0}
    assert cell(stats, 1) == "2.0 (1.0-3.0)"


def test_run_process_measures_a_whole_process_and_keeps_its_output():
    code = "import sys; sum(range(10**6)); print('out'); print('err', file=sys.stderr)"
    sample = run_process([sys.executable, "-c", code], keep_stdout=True, keep_stderr=True)
    assert sample["wall_s"] > 0 and sample["cpu_s"] > 0 and sample["peak_rss_mib"] > 1
    assert sample["stdout"] == "out\n" and sample["stderr"] == "err\n"
    assert sample["started_at"] > 0 and sample["pid"] > 0


def test_run_process_raises_with_the_stderr_tail_and_what_it_measured():
    with pytest.raises(ProcessFailed, match="exited 3:\nboom") as failed:
        run_process([sys.executable, "-c", "import sys; print('boom', file=sys.stderr); exit(3)"])
    assert failed.value.sample["wall_s"] > 0


def test_write_results_writes_json_and_markdown_with_the_load_after(tmp_path, capsys):
    report = {"command": "python -m benchmarks.x", "figure": 1.5}
    path = write_results(report, "x", lambda r: f"# x\n\n{r['figure']}\n", folder=tmp_path)
    written = json.loads(path.read_text())
    assert written["figure"] == 1.5 and "load average" in written["uptime_after"]
    assert (tmp_path / "x.md").read_text() == "# x\n\n1.5\n"
    assert "# x" in capsys.readouterr().out


def _run(env: str, variant: str, seed: int, final: float, budget: int = 100_000) -> dict:
    return {"env": env, "variant": variant, "seed": seed, "budget": budget, "final": final}


def _report(command: str, commit: str, envs: list[str], runs: list[dict]) -> dict:
    machine = {"date_utc": "2026-12-01 08:00:00", "git_commit": commit}
    shared = {env: False for env in envs}
    return {"command": command, "machine": machine, "envs": envs, "runs": runs, "shared": shared}


KEY = ("env", "variant", "seed", "budget")


def test_merge_replaces_only_the_rows_a_subset_re_runs(tmp_path):
    old = [_run("Acrobot-v1", "planner", s, -110.0) for s in range(3)]
    old += [_run("Acrobot-v1", "zoo", s, -80.0) for s in range(3)]
    (tmp_path / "results.json").write_text(
        json.dumps(_report("first", "aaaaaaa", ["Acrobot-v1"], old))
    )
    redone = [("Acrobot-v1", "planner", s, 100_000) for s in range(3)]
    new = _report("second --merge", "bbbbbbb", ["Pendulum-v1"], [])
    merged = merge_previous(new, tmp_path / "results.json", redone, KEY, ["envs"], ["shared"])
    assert [(r["variant"], r["final"]) for r in merged["runs"]] == [("zoo", -80.0)] * 3
    assert [c["commit"] for c in merged["commands"]] == ["aaaaaaa", "bbbbbbb"]
    assert merged["envs"] == ["Acrobot-v1", "Pendulum-v1"]
    assert merged["shared"] == {"Acrobot-v1": False, "Pendulum-v1": False}


def test_a_row_at_another_budget_is_kept_beside_the_same_seed(tmp_path):
    old = [_run("Acrobot-v1", "planner", 0, -110.0)]
    (tmp_path / "results.json").write_text(json.dumps(_report("a", "a", ["Acrobot-v1"], old)))
    redone = [("Acrobot-v1", "planner", 0, 1_000_000)]
    merged = merge_previous(_report("b", "b", [], []), tmp_path / "results.json", redone, KEY)
    assert [(r["budget"], r["final"]) for r in merged["runs"]] == [(100_000, -110.0)]


def test_without_a_previous_file_the_report_is_kept_as_it_is(tmp_path):
    report = _report("a", "a", [], [_run("Acrobot-v1", "zoo", 0, 1.0)])
    assert merge_previous(report, tmp_path / "none.json", [], KEY) is report
