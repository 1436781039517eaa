"""`compare`: groups of real runs from a real MLflow store, their verdicts, the CLI's outputs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import BadInputError
from ppo_platform.reports.compare import compare_scores, scored_groups
from ppo_platform.reports.compare_render import render_comparison, write_comparison
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps import run_sweep
from ppo_platform.tracking import tags as tag

# 4,096 GridWorld steps per run, 5 seeds per variant: learning rates 1000x apart. GridWorld, not
# CartPole: an untrained CartPole policy's greedy evaluation already scores 58-224 on these seeds,
# so 4k CartPole steps separate the rates only barely; in GridWorld a policy that has not learned
# never reaches the goal.
BASE = """\
name: {name}
env: {{id: ppo_platform/GridWorld-v0, n_envs: 4}}
rollout: {{n_steps: 64}}
update: {{epochs: 4, minibatch_size: 64, learning_rate: 1.0e-3}}
surrogate: {{entropy_coef: 0.01}}
budget: {{total_timesteps: 4096}}
evaluation: {{every_timesteps: 4096, episodes: 2}}
checkpoints: {{every_timesteps: 0}}
diagnostics: {{on_alert: warn}}
sweep:
  {grid}
  seeds: [0, 1, 2, 3, 4]
"""
LEARNING_RATES = BASE.format(name="cmp-lr", grid="grid: {update.learning_rate: [1.0e-3, 1.0e-6]}")
TAGS_ONLY = BASE.format(name="cmp-tag", grid="grid: {tracking.tags.note: [a, b]}")


def run(name: str, group: str, score: float, *, env: str = "CartPole-v1", source: str = "s"):
    """A training run as `tracking.compare_reads` returns it."""
    return {
        "run_id": name,
        "status": "FINISHED",
        "start_time": 0,
        "tags": {tag.RUN_NAME: name, tag.GRID_POINT: group, tag.ENV_ID: env},
        "metrics": {"eval/mean_reward": score},
        "parent_name": "sweep",
        "source": {"run_id": source, "name": source, "kind": "sweep"},
    }


def test_groups_by_variant_and_skip_runs_without_a_finished_score():
    runs = [run(f"a{i}", "lr=1", 100.0 + i) for i in range(3)]
    runs += [{**run("b0", "lr=2", 5.0), "status": "FAILED"}, run("b1", "lr=2", float("nan"))]
    groups, skipped = scored_groups(runs, "eval/mean_reward", "variant")
    assert groups == {"lr=1": {"CartPole-v1": [100.0, 101.0, 102.0]}}
    assert skipped == ["b0 (b0): FAILED", "b1 (b1): no finite eval/mean_reward"]


def test_groups_over_several_envs_are_normalised_and_stratified():
    groups = {
        "x": {"CartPole-v1": [475.0] * 5, "Pendulum-v1": [-200.0] * 5},
        "y": {"CartPole-v1": [25.0] * 5, "Pendulum-v1": [-1197.0] * 5},
    }
    comparison = compare_scores(groups)
    assert comparison.normalized
    assert [g.iqm for g in comparison.groups] == pytest.approx([1.0, 0.0])
    assert comparison.pairs[0].verdict == "better"


def test_the_json_has_the_documented_shape_and_the_markdown_the_verdicts(tmp_path):
    groups = {
        "a": {"CartPole-v1": [500.0, 480, 490, 470, 460]},
        "b": {"CartPole-v1": [9.0] * 3},
        "c": {"CartPole-v1": [0.1 + 0.2] * 5},  # identical scores: no bar below zero length
    }
    comparison = compare_scores(groups, threshold=475.0)
    body = comparison.to_json()
    assert set(body) >= {"metric", "groups", "pairs"}
    assert set(body["groups"][0]) >= {"name", "n", "scores", "iqm", "iqm_ci", "mean", "median"}
    assert set(body["pairs"][0]) == {"a", "b", "probability_of_improvement", "ci", "verdict"}
    assert body["groups"][0]["solve_rate"]["solved"] == 3  # 500, 480, 490
    text = render_comparison(comparison)
    assert "| a | b | 1.0 [1.0, 1.0] | **better** |" in text  # 5 against 3: enough to tell
    assert "| c | 5 | 0.3 [0.3, 0.3] |" in text
    assert "b: only 3 seeds" in text
    files = write_comparison(comparison, tmp_path)
    assert all(path.stat().st_size > 0 for path in files)
    assert json.loads((tmp_path / "comparison.json").read_text()) == body


def test_bad_groupings_and_baselines_name_the_option():
    with pytest.raises(BadInputError, match="--baseline"):
        compare_scores({"a": {"e": [1.0]}}, baseline="z")
    output = CliRunner().invoke(app, ["compare", "0" * 32, "--by", "colour"])
    assert output.exit_code == 2 and "--by" in output.output


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory: pytest.TempPathFactory):
    """The two sweeps above, in one store; yields their parent run ids."""
    home = tmp_path_factory.mktemp("compare") / "home"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PPO_PLATFORM_HOME", str(home))
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)
        get_settings.cache_clear()
        first = run_sweep(load_spec_text(LEARNING_RATES), workers=2)
        second = run_sweep(load_spec_text(TAGS_ONLY), workers=2)
        assert not first.failed and not second.failed
        yield first.parent_run_id, second.parent_run_id
    get_settings.cache_clear()


def compare_json(*args: str) -> dict:
    if "--out" not in args:  # not the default folder under the working directory
        args = (*args, "--out", str(get_settings().home / "compare"))
    output = CliRunner().invoke(app, ["compare", *args, "--json"])
    assert output.exit_code == 0, output.output
    return json.loads(output.stdout)


@pytest.mark.slow
def test_learning_rates_1000x_apart_get_better_and_worse(two_sweeps):
    body = compare_json(two_sweeps[0])
    assert [g["name"] for g in body["groups"]] == [
        "update.learning_rate=0.001",
        "update.learning_rate=1e-06",
    ]
    assert [g["n"] for g in body["groups"]] == [5, 5]
    (pair,) = body["pairs"]
    assert pair["verdict"] == "better", body
    reverse = compare_json(two_sweeps[0], "--baseline", "update.learning_rate=0.001")
    assert reverse["pairs"][0]["verdict"] == "worse"


@pytest.mark.slow
def test_variants_that_differ_only_in_a_tag_are_indistinguishable(two_sweeps):
    body = compare_json(two_sweeps[1])
    (pair,) = body["pairs"]
    assert (pair["a"], pair["b"]) == ("tracking.tags.note=a", "tracking.tags.note=b")
    assert pair["verdict"] == "indistinguishable"
    by_tag = compare_json(two_sweeps[1], "--by", "tag:note")
    assert [(g["name"], g["n"]) for g in by_tag["groups"]] == [("note=a", 5), ("note=b", 5)]


@pytest.mark.slow
def test_compare_works_across_runs_from_different_sweeps(two_sweeps, tmp_path):
    body = compare_json(*two_sweeps, "--out", str(tmp_path))
    names = [g["name"] for g in body["groups"]]
    assert len(names) == 4 and names[0].startswith("cmp-lr") and names[3].startswith("cmp-tag")
    verdicts = {(p["a"], p["b"]): p["verdict"] for p in body["pairs"]}
    assert verdicts[(names[1], names[2])] == "worse"  # lr 1e-6 against the tag sweep's 1e-3
    assert verdicts[(names[0], names[2])] == "indistinguishable"  # the same config
    assert {"comparison.md", "iqm.png", "profiles.png", "improvement.png"} <= {
        path.name for path in tmp_path.iterdir()
    }
