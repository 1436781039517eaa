"""The sweep comparison report: its numbers, checked against the child runs' own metrics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.reports.markdown import render_markdown
from ppo_platform.reports.plots import band, plot_update_size
from ppo_platform.reports.stats import (
    SeedRun,
    SweepReport,
    default_threshold,
    late_std,
    steps_to_threshold,
    summarize,
)
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps import run_sweep
from ppo_platform.tracking.queries import child_runs
from ppo_platform.tracking.tags import GRID_POINT as POINT_TAG

# 2 variants x 2 seeds of ~2k GridWorld env steps, evaluated every 256 steps.
SWEEP = """\
name: report-sweep
env: {id: ppo_platform/GridWorld-v0, n_envs: 4}
rollout: {n_steps: 64}
update: {epochs: 4, minibatch_size: 64, learning_rate: 1.0e-3}
surrogate: {entropy_coef: 0.01}
budget: {total_timesteps: 2048}
evaluation: {every_timesteps: 256, episodes: 2}
checkpoints: {every_timesteps: 0}
sweep:
  grid: {update.epochs: [1, 4]}
  seeds: [0, 1]
  threshold: 0.0
"""


# ---- the per-run numbers -------------------------------------------------------------------


def test_steps_to_threshold_is_the_first_evaluation_at_or_above_it():
    evals = [(100, -1.0), (200, 0.5), (300, 0.2), (400, 0.9)]
    assert steps_to_threshold(evals, 0.5) == 200
    assert steps_to_threshold(evals, 0.95) is None
    assert steps_to_threshold(evals, None) is None


def test_stability_is_the_std_over_the_last_quarter_of_training():
    evals = [(step, float(step)) for step in range(0, 1001, 100)]  # last 25%: steps 750..1000
    assert late_std(evals) == pytest.approx(np.std([800.0, 900.0, 1000.0]))
    assert late_std([(1000, 5.0)]) is None  # one evaluation says nothing about stability


def test_the_band_covers_each_curve_only_inside_its_own_steps():
    steps, mean, low, high = band([[(0, 0.0), (100, 10.0)], [(0, 2.0), (50, 4.0)]])
    assert list(steps) == [0, 50, 100]
    assert list(mean) == pytest.approx([1.0, 4.5, 10.0])  # step 100: only the longer run
    assert list(low) == pytest.approx([0.0, 4.0, 10.0])
    assert list(high) == pytest.approx([2.0, 5.0, 10.0])


def test_the_default_threshold_is_gymnasiums_reward_threshold():
    assert default_threshold("CartPole-v1") == 475.0
    assert default_threshold("ppo_platform/GridWorld-v0") is None


def seed_run(seed: int, post_kl: list[float], by_signal: dict[str, int]) -> SeedRun:
    steps = [256 * (i + 1) for i in range(len(post_kl))]
    return SeedRun(
        run_id=f"run{seed}",
        name=f"k30-s{seed}",
        variant="update.epochs=30",
        variant_index=0,
        seed=seed,
        status="FINISHED",
        error=None,
        evals=[(steps[-1], 100.0 + seed)],
        approx_kl=list(zip(steps, [0.01] * len(steps), strict=True)),
        clip_fraction=list(zip(steps, [0.2, 0.4, 0.6][: len(steps)], strict=True)),
        alerts=sum(by_signal.values()),
        approx_kl_post=list(zip(steps, post_kl, strict=True)),
        alerts_by_signal=by_signal,
    )


def test_the_summary_reports_post_update_kl_mean_max_and_alerts_per_signal():
    runs = [
        seed_run(0, [0.01, 0.03, 0.2], {"kl": 1, "clip_fraction_high": 2}),
        seed_run(1, [0.02, 0.02, 0.02], {"clip_fraction_high": 3}),
    ]
    summary = summarize("update.epochs=30", runs, 475.0)
    assert summary.mean_kl_post == pytest.approx((0.08 + 0.02) / 2)
    assert summary.max_kl_post == pytest.approx(0.2)
    assert summary.alerts_by_signal == {"clip_fraction_high": 5, "kl": 1}
    assert summary.alerts == 6


def test_a_run_without_post_update_kl_leaves_its_columns_empty():
    run = seed_run(0, [0.01], {})
    bare = SeedRun(**{**run.__dict__, "approx_kl_post": [], "alerts_by_signal": {}})
    summary = summarize("v", [bare], None)
    assert (summary.mean_kl_post, summary.max_kl_post, summary.alerts_by_signal) == (None, None, {})


def test_the_markdown_row_shows_post_update_kl_and_alerts_per_signal():
    runs = [seed_run(0, [0.01, 0.03, 0.2], {"kl": 1, "clip_fraction_high": 2})]
    report = SweepReport("p" * 32, "ex2", "CartPole-v1", 475.0, [summarize("k", runs, 475.0)], runs)
    text = render_markdown(report, {})
    header = next(line for line in text.splitlines() if line.startswith("| variant |"))
    row = next(line for line in text.splitlines() if line.startswith("| k |"))
    cells = dict(zip(header.split(" | "), row.split(" | "), strict=True))
    assert cells["mean post-update KL"] == "0.080"
    assert cells["max post-update KL"] == "0.200"
    assert cells["alerts |"] == "3 (clip_fraction_high 2, kl 1) |"
    assert "![post-update KL and clip fraction per update](update_size.png)" in text


def test_the_runs_table_names_each_members_top_cause():
    runs = [seed_run(0, [0.01], {}), seed_run(1, [0.3], {})]
    runs[1] = SeedRun(**{**runs[1].__dict__, "top_cause": "step_too_large"})
    report = SweepReport("p" * 32, "ex2", "CartPole-v1", 475.0, [summarize("k", runs, 475.0)], runs)
    lines = render_markdown(report, {}).splitlines()
    header = next(line for line in lines if line.startswith("| run |"))
    rows = [line for line in lines if line.startswith("| k30-s")]
    assert header.endswith("| alerts | top cause |")
    assert rows[0].endswith("| 0 | - |") and rows[1].endswith("| 0 | step_too_large |")


def test_the_update_size_plot_is_a_png_with_both_panels(tmp_path):
    runs = [seed_run(0, [0.01, 0.03, 0.2], {}), seed_run(1, [0.02, 0.02, 0.02], {})]
    path = plot_update_size({"k": runs}, 0.1, 0.4, tmp_path / "update_size.png", "ex2")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = plot_update_size({"k": []}, None, None, tmp_path / "empty.png", "ex2")
    assert empty.stat().st_size > 0  # no curves: the panel says so instead of failing


# ---- a tiny real sweep ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory):
    """Run SWEEP once for the module; yields (result, MlflowClient)."""
    from mlflow.tracking import MlflowClient

    home = tmp_path_factory.mktemp("report") / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PPO_PLATFORM_HOME", str(home))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        get_settings.cache_clear()
        result = run_sweep(load_spec_text(SWEEP), workers=2)
        yield result, MlflowClient(get_settings().tracking_uri)
    get_settings.cache_clear()


def own_numbers(client, runs: list) -> dict[str, float]:
    """The report's numbers for one variant, recomputed straight from MLflow's metric store."""
    finals, reach, kls, clips, alerts, post = [], [], [], [], 0, []
    for run in runs:
        evals = client.get_metric_history(run.info.run_id, "eval/mean_reward")
        evals = sorted(evals, key=lambda m: (m.step, m.timestamp))
        finals.append(evals[-1].value)
        reach.append(next((m.step for m in evals if m.value >= 0.0), None))
        kls.append(
            np.mean(
                [m.value for m in client.get_metric_history(run.info.run_id, "train/approx_kl")]
            )
        )
        clips.append(
            np.mean(
                [m.value for m in client.get_metric_history(run.info.run_id, "train/clip_fraction")]
            )
        )
        post.append(
            [m.value for m in client.get_metric_history(run.info.run_id, "train/approx_kl_post")]
        )
        alerts += int(
            max(
                m.value
                for m in client.get_metric_history(run.info.run_id, "diagnostics/alerts_total")
            )
        )
    reached = [step for step in reach if step is not None]
    return {
        "final_mean": np.mean(finals),
        "final_std": np.std(finals),
        "final_min": min(finals),
        "reached": len(reached),
        "steps": np.mean(reached) if reached else None,
        "kl": np.mean(kls),
        "clip": np.mean(clips),
        "alerts": alerts,
        "kl_post": np.mean([np.mean(values) for values in post]),
        "kl_post_max": max(max(values) for values in post),
    }


@pytest.mark.slow
def test_the_report_matches_the_child_runs_metrics(swept):
    result, client = swept
    parent = client.get_run(result.parent_run_id)
    runs = child_runs(client, parent.info.experiment_id, result.parent_run_id)
    report = result.report
    assert [v.variant for v in report.variants] == ["update.epochs=1", "update.epochs=4"]
    for variant in report.variants:
        mine = [run for run in runs if run.data.tags[POINT_TAG] == variant.variant]
        expected = own_numbers(client, mine)
        assert (variant.runs, variant.finished) == (2, 2)
        assert variant.final_mean == pytest.approx(expected["final_mean"])
        assert variant.final_std == pytest.approx(expected["final_std"])
        assert variant.final_min == pytest.approx(expected["final_min"])
        assert variant.reached == expected["reached"]
        assert variant.mean_steps_to_threshold == pytest.approx(expected["steps"])
        assert variant.mean_kl == pytest.approx(expected["kl"])
        assert variant.mean_clip_fraction == pytest.approx(expected["clip"])
        assert variant.alerts == expected["alerts"]
        assert variant.mean_kl_post == pytest.approx(expected["kl_post"])
        assert variant.max_kl_post == pytest.approx(expected["kl_post_max"])
        assert variant.mean_kl_post > 0  # measured after the update, also for K = 1
        assert sum(variant.alerts_by_signal.values()) == variant.alerts


@pytest.mark.slow
def test_the_report_is_logged_as_artifacts_of_the_parent_run(swept):
    result, client = swept
    logged = {
        Path(item.path).name for item in client.list_artifacts(result.parent_run_id, "report")
    }
    assert {"report.md", "returns.png", "kl.png", "update_size.png", "summary.json"} <= logged
    assert result.report.markdown.startswith("# Sweep report: report-sweep")
    for path in result.report.files:
        if path.suffix == ".png":
            assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_report_command_rebuilds_the_table_from_mlflow(swept):
    result, _ = swept
    output = CliRunner().invoke(app, ["report", result.parent_run_id])
    assert output.exit_code == 0, output.output
    table_rows = [line for line in output.output.splitlines() if line.startswith("| update.")]
    assert [row.split(" | ")[0] for row in table_rows] == ["| update.epochs=1", "| update.epochs=4"]
    assert output.output.split("## Runs")[0] == result.report.markdown.split("## Runs")[0]


def test_the_report_command_exits_2_for_an_unknown_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    try:
        output = CliRunner().invoke(app, ["report", "0" * 32])
    finally:
        get_settings.cache_clear()
    assert output.exit_code == 2
    assert "no MLflow run" in output.output
