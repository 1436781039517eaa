"""`ppo-platform sweep` over a `ppo_lm` spec: variants of lm fields x seeds expand into LM
member specs, train the tiny demo model as LM runs under one parent run, and the sweep report
and `compare` score them by the held-out greedy reward (here: held-out accuracy)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import SpecError
from ppo_platform.settings import Settings
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.spec.workloads import load_any_spec
from ppo_platform.sweeps import expand_sweep
from ppo_platform.tracking import tags as tag
from ppo_platform.training.lm_demo import init_demo

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"
VARIANTS = [
    {"advantage.estimator": "gae"},
    {"advantage.estimator": "grpo", "advantage.group_size": 2, "surrogate.objective": "gspo"},
]


def lm_sweep_spec(folder: Path, variants: list[dict[str, Any]] | None = None) -> Path:
    """specs/lm_arithmetic.yaml cut to 2 updates of 8 prompts, with a sweep section."""
    data = yaml.safe_load(SPEC.read_text())
    data["name"] = "lm-sweep"
    data["budget"]["updates"] = 2
    data["evaluation"].update(every_updates=1, max_prompts=16, table_rows=2)
    data["lm"]["prompts_per_update"] = 8
    data["update"].update(minibatch_size=4, epochs=2)
    data["sweep"] = {"variants": variants or VARIANTS, "seeds": [3]}
    path = folder / "lm_sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def demo_home(shared_home: Path) -> Path:
    init_demo(Settings(home=shared_home), sft_steps=10)
    return shared_home


def test_an_lm_sweep_expands_into_lm_member_specs(demo_home: Path, tmp_path: Path):
    spec = load_any_spec(lm_sweep_spec(tmp_path))
    members = expand_sweep(spec)
    names = [m.spec.name for m in members]
    assert names == ["lm-sweep-gae-s3", "lm-sweep-grpo-group_size2-gspo-s3"]
    first, second = (m.spec for m in members)
    assert isinstance(first, LMExperimentSpec) and isinstance(second, LMExperimentSpec)
    assert (first.advantage.estimator, first.surrogate.objective) == ("gae", "ppo")
    assert (second.advantage.estimator, second.advantage.group_size) == ("grpo", 2)
    assert second.surrogate.objective == "gspo" and second.budget.seed == 3
    assert first.sweep is None and first.experiment_name == "lm-sweep"


def test_an_lm_variant_the_lm_rules_refuse_refuses_the_sweep(demo_home: Path, tmp_path: Path):
    variants = [{"advantage.estimator": "grpo"}]  # group_size stays 1: no group to compare
    with pytest.raises(SpecError) as caught:
        expand_sweep(load_any_spec(lm_sweep_spec(tmp_path, variants)))
    (issue,) = caught.value.issues
    assert issue.path == "advantage.group_size" and issue.rule == "group_of_one"
    assert "[at grid point advantage.estimator=grpo, seed 3]" in issue.message


def test_an_lm_variant_from_outside_stays_inside_the_lm_folder(demo_home: Path, tmp_path: Path):
    outside = str(tmp_path / "elsewhere")
    variants = [{"lm.model.policy": outside}]
    spec = load_any_spec(lm_sweep_spec(tmp_path, [{"lm.kl.beta": 0.1}]))
    data = spec.model_dump(mode="json", by_alias=True, exclude_unset=True)
    data["sweep"]["variants"] = variants
    with pytest.raises(SpecError) as caught:
        expand_sweep(LMExperimentSpec.model_validate(data), from_outside=True)
    assert [issue.path for issue in caught.value.issues] == ["lm.model.policy"]


@pytest.mark.slow
def test_an_lm_sweep_trains_lm_members_under_one_parent_and_compares_them(
    demo_home: Path, tmp_path: Path
):
    runner = CliRunner()
    result = runner.invoke(app, ["sweep", str(lm_sweep_spec(tmp_path)), "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "2 runs (2 variants x 1 seeds)" in result.output
    assert "final held-out reward mean ± std" in result.output
    assert "lm-sweep-gae-s3: FINISHED, final held-out reward" in result.output
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    (parent,) = client.search_runs(
        [client.get_experiment_by_name("lm-sweep").experiment_id],
        filter_string=f"tags.`{tag.KIND}` = 'sweep'",
    )
    assert parent.data.tags[tag.ENV_ID] == "lm:arithmetic/sft"
    assert parent.data.tags[tag.ALGORITHM] == "ppo_lm"
    members = client.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'",
    )
    assert sorted(m.data.tags[tag.GRID_POINT] for m in members) == [
        "advantage.estimator=gae",
        "advantage.estimator=grpo, advantage.group_size=2, surrogate.objective=gspo",
    ]
    accuracy = {}
    for member in members:
        assert member.info.status == "FINISHED" and member.data.params["algorithm"] == "ppo_lm"
        assert member.data.tags[tag.ENV_ID] == "lm:arithmetic/sft"
        assert "lm/reward_mean" in member.data.metrics  # an LM run's own metrics
        history = client.get_metric_history(member.info.run_id, "eval/mean_reward")
        assert [point.step for point in history] == [1, 2]  # evaluations after updates 1, 2
        accuracy[member.data.tags[tag.GRID_POINT]] = history[-1].value
    report = demo_home / "runs" / parent.info.run_id / "report" / "summary.json"
    finals = {v["variant"]: v["final_mean"] for v in json.loads(report.read_text())["variants"]}
    assert finals == pytest.approx(accuracy)
    compared = runner.invoke(app, ["compare", parent.info.run_id, "--json"])
    assert compared.exit_code == 0, compared.output
    scored = json.loads(compared.stdout)
    assert scored["metric"] == "eval/mean_reward"
    assert {g["name"]: g["iqm"] for g in scored["groups"]} == pytest.approx(accuracy)
    assert len(scored["pairs"]) == 1  # one verdict: the two variants score the same task


def test_an_lm_sweep_from_outside_counts_every_members_tokens(demo_home: Path, tmp_path: Path):
    from ppo_platform.jobs.intake import prepare_lm_submission

    variants = [{"lm.prompts_per_update": 8}, {"lm.prompts_per_update": 16}]
    text = lm_sweep_spec(tmp_path, variants).read_text()
    # 2 updates x 4 new tokens x (8 + 16 prompts), one seed
    submission = prepare_lm_submission(text, 192, "request")
    assert (submission.kind, submission.total_timesteps) == ("sweep", 192)
    with pytest.raises(SpecError) as refused:
        prepare_lm_submission(text, 191, "request")
    (issue,) = refused.value.issues
    assert issue.path == "budget.updates" and issue.rule == "max_env_steps"
    assert "the sweep could generate 192 tokens" in issue.message


def test_the_shipped_comparison_expands_into_four_variants_of_five_seeds(demo_home: Path):
    spec = load_any_spec(SPEC.parent / "lm_compare.yaml")
    members = expand_sweep(spec)
    assert len(members) == 20 and {m.seed for m in members} == {1, 2, 3, 4, 5}
    kinds = {
        (m.spec.advantage.estimator, m.spec.surrogate.objective)
        for m in members
        if isinstance(m.spec, LMExperimentSpec)
    }
    assert kinds == {("gae", "ppo"), ("grpo", "ppo"), ("rloo", "ppo"), ("grpo", "gspo")}
    for member in members:  # every variant samples 128 responses per update
        assert isinstance(member.spec, LMExperimentSpec)
        assert member.spec.responses_per_update == 128
        assert member.spec.critic_free == (member.spec.advantage.estimator != "gae")


def test_an_lm_sweep_job_is_admitted_for_the_members_it_trains_at_once(
    demo_home: Path, tmp_path: Path
):
    from ppo_platform.execution.local import default_workers
    from ppo_platform.jobs.admission import job_memory
    from ppo_platform.spec.lm_inputs import lm_run_memory

    spec = load_any_spec(lm_sweep_spec(tmp_path))  # 2 members
    assert isinstance(spec, LMExperimentSpec)
    settings = Settings(home=demo_home)
    one_run = lm_run_memory(spec, settings)
    data = spec.resolved()
    assert job_memory(data, "run", settings) == one_run
    assert job_memory(data, "sweep", settings) == one_run * min(2, default_workers())
