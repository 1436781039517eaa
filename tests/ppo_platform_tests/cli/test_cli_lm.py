"""`ppo-platform lm init-demo`, then `validate` and `run` of specs/lm_arithmetic.yaml: an MLflow
run like any other (real store), with per-slice metrics and a sample-generations table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"
SHORT = [
    "--set", "budget.updates=3",
    "--set", "evaluation.every_updates=2",
    "--set", "evaluation.max_prompts=16",
    "--set", "lm.prompts_per_update=8",
    "--set", "update.minibatch_size=4",
]  # fmt: skip


@pytest.fixture(scope="module")
def demo_home(shared_home: Path) -> Path:
    result = CliRunner().invoke(app, ["lm", "init-demo", "--sft-steps", "20"])
    assert result.exit_code == 0, result.output
    assert "SFT held-out accuracy" in result.output
    return shared_home


def test_init_demo_writes_a_model_folder_and_prompts(demo_home):
    folder = demo_home / "lm" / "arithmetic"
    assert (folder / "sft" / "config.json").is_file()
    assert (folder / "sft" / "model.safetensors").is_file()
    assert (folder / "sft" / "tokenizer.json").is_file()
    first = json.loads((folder / "train.jsonl").read_text().splitlines()[0])
    assert set(first) == {"prompt", "answer", "task"}
    assert len((folder / "heldout.jsonl").read_text().splitlines()) == 200


def test_init_demo_refuses_to_overwrite_without_force(demo_home):
    result = CliRunner().invoke(app, ["lm", "init-demo", "--sft-steps", "1"])
    assert result.exit_code == 2
    assert "--force" in result.output


def test_validate_takes_the_lm_spec_and_refuses_k_31(demo_home):
    ok = CliRunner().invoke(app, ["validate", str(SPEC)])
    assert ok.exit_code == 0, ok.output
    assert "valid ppo_lm spec" in ok.output
    refused = CliRunner().invoke(app, ["validate", str(SPEC), "--set", "update.epochs=31"])
    assert refused.exit_code == 2
    assert "update.epochs" in refused.output and "30" in refused.output
    refused = CliRunner().invoke(
        app, ["validate", str(SPEC), "--set", "surrogate.clip_epsilon=0.35"]
    )
    assert refused.exit_code == 2 and "clip epsilon" in refused.output


@pytest.mark.slow
def test_run_trains_the_lm_spec_as_an_mlflow_run(demo_home):
    result = CliRunner().invoke(app, ["run", str(SPEC), "--quiet", *SHORT])
    assert result.exit_code == 0, result.output
    assert "completed" in result.output
    # It speaks LM: updates and a reward, no spread it does not have, no env steps.
    assert "3 updates in" in result.output and "final eval reward" in result.output
    assert "+-" not in result.output and "env steps" not in result.output
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "lm-arithmetic"]
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert run.data.params["lm.reduction"] == "token_mean"
    for name in ("lm/reward_mean", "lm/kl_ref", "train/approx_kl", "train/clip_fraction"):
        history = client.get_metric_history(run.info.run_id, name)
        assert [m.step for m in history] == [1, 2, 3], name
    metrics = run.data.metrics
    for name in ("lm/response_length", "train/ratio_max", "train/entropy"):
        assert name in metrics
    assert {"lm/reward_mean/carry", "lm/reward_mean/no_carry"} <= set(metrics)
    assert [m.step for m in client.get_metric_history(run.info.run_id, "eval/mean_reward")] == [
        2,
        3,
    ]
    samples = {a.path for a in client.list_artifacts(run.info.run_id, "samples")}
    assert samples == {"samples/eval_update_000002.json", "samples/eval_update_000003.json"}
    table = json.loads(
        Path(
            client.download_artifacts(run.info.run_id, "samples/eval_update_000003.json")
        ).read_text()
    )
    assert len(table["rows"]) == 16 and {"prompt", "response", "reward"} <= set(table["rows"][0])
    models = {a.path for a in client.list_artifacts(run.info.run_id, "model")}
    assert "model/model.safetensors" in models and "model/value_head.pt" in models


def plan_rlhf(demo_home: Path, out: Path, *extra: str) -> list[str]:
    folder = demo_home / "lm" / "arithmetic"
    return [
        "plan", "--use-case", "rlhf", "--model-dir", str(folder / "sft"),
        "--prompts", str(folder / "train.jsonl"), "--budget", "16", "--out", str(out), *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_plan_rlhf_writes_an_lm_spec_that_validates_and_trains(demo_home, tmp_path):
    planned = CliRunner().invoke(app, plan_rlhf(demo_home, tmp_path))
    assert planned.exit_code == 0, planned.output
    assert "8 per update (2 updates)" in planned.output
    assert "KL beta 0.05 (fixed)" in planned.output
    spec = tmp_path / "spec.yaml"
    assert "algorithm: ppo_lm" in spec.read_text()
    assert yaml.safe_load(spec.read_text())["lm"]["kl"]["target"] is None
    assert "`update.learning_rate`" in (tmp_path / "skill-ppo-trainer.md").read_text()
    assert CliRunner().invoke(app, ["validate", str(spec)]).exit_code == 0
    result = CliRunner().invoke(app, ["run", str(spec), "--quiet"])
    assert result.exit_code == 0, result.output
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "sft-ppo-lm"]
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    rewards = client.get_metric_history(run.info.run_id, "lm/reward_mean")
    assert [m.step for m in rewards] == [1, 2]
    assert run.data.metrics["lm/kl_ref"] >= 0.0
    # beta fixed at the demo's 0.05 (no adaptive target it could halve to its floor chasing)
    assert [m.value for m in client.get_metric_history(run.info.run_id, "lm/kl_beta")] == [
        0.05,
        0.05,
    ]


@pytest.mark.slow
def test_plan_reasoning_writes_a_grpo_spec_with_reasons_that_validates_and_trains(
    demo_home, tmp_path
):
    args = plan_rlhf(demo_home, tmp_path)
    args[args.index("rlhf")] = "reasoning"
    planned = CliRunner().invoke(app, args)
    assert planned.exit_code == 0, planned.output
    # budget 16 responses: the rlhf rollout of 8 responses as one prompt's group of 8
    assert "planned GRPO" in planned.output and "1 x 8 per update (2 updates)" in planned.output
    spec = yaml.safe_load((tmp_path / "spec.yaml").read_text())
    assert spec["name"] == "sft-grpo-lm"
    assert spec["advantage"]["estimator"] == "grpo" and spec["advantage"]["group_size"] == 8
    assert spec["lm"]["kl"]["placement"] == "loss" and spec["lm"]["kl"]["estimator"] == "k3"
    markdown = (tmp_path / "skill-ppo-trainer.md").read_text()
    assert markdown.startswith("# GRPO on a language model (reasoning): the plan")
    assert "`advantage.group_size`" in markdown and "no value head" in markdown
    assert "`surrogate.clip_value`" not in markdown  # no critic, nothing planned for it
    result = CliRunner().invoke(app, ["run", str(tmp_path / "spec.yaml"), "--quiet"])
    assert result.exit_code == 0, result.output
    client = MlflowClient(f"sqlite:///{(demo_home / 'mlflow.db').resolve()}")
    (experiment,) = [e for e in client.search_experiments() if e.name == "sft-grpo-lm"]
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert [m.step for m in client.get_metric_history(run.info.run_id, "lm/reward_mean")] == [1, 2]
    artifacts = [a.path for a in client.list_artifacts(run.info.run_id, "model")]
    assert not any("value_head" in path for path in artifacts)  # no critic saved


def test_plan_refuses_a_use_case_that_is_not_for_a_language_model(demo_home, tmp_path):
    args = plan_rlhf(demo_home, tmp_path)
    args[args.index("rlhf")] = "atari"
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--use-case" in result.output and "reasoning" in result.output


def test_plan_rlhf_refuses_prompts_without_answers(demo_home, tmp_path):
    prompts = tmp_path / "bare.jsonl"
    prompts.write_text('{"prompt": "1+1="}\n')
    args = plan_rlhf(demo_home, tmp_path)
    args[args.index("--prompts") + 1] = str(prompts)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "--prompts" in result.output and "answer" in result.output
    assert not (tmp_path / "spec.yaml").exists()


@pytest.mark.slow
def test_an_adaptive_kl_that_halves_beta_to_its_floor_is_named_inert(demo_home, tmp_path):
    """An adaptive target the measured KL never reaches: beta halves every update (the policy
    starts at its reference, KL 0) and sits below 1e-6 from update 16 on; the doctor says so
    and its patch fixes beta (docs/guides/diagnostics.md)."""
    short = [*SHORT, "--set", "budget.updates=34", "--set", "evaluation.every_updates=0"]
    args = [*short, "--set", "lm.kl.target=2.0", "--set", "lm.kl.beta=0.05", "--quiet"]
    result = CliRunner().invoke(app, ["run", str(SPEC), *args])
    assert result.exit_code == 0, result.output
    assert "doctor: lm_kl_penalty_inert" in result.output
    run_id = result.output.split("completed: run ")[1].split(",")[0]
    fixed = tmp_path / "fixed.yaml"
    diagnosis = CliRunner().invoke(app, ["doctor", run_id, "--json", "--write", str(fixed)])
    assert diagnosis.exit_code == 0, diagnosis.output
    top = json.loads(diagnosis.stdout[: diagnosis.stdout.rindex("}") + 1])["causes"][0]
    assert top["cause"] == "lm_kl_penalty_inert" and top["patch"] == {"lm.kl.target": None}
    from ppo_platform.spec.workloads import load_any_spec

    patched = load_any_spec(fixed)  # validates
    assert patched.lm.kl.target is None and patched.lm.kl.beta == 0.05  # type: ignore[union-attr]


@pytest.mark.parametrize("use_case", ["rlhf", "reasoning"])
def test_a_language_model_plan_without_its_model_folder_names_the_missing_option(use_case):
    result = CliRunner().invoke(app, ["plan", "--use-case", use_case, "--budget", "100"])
    assert result.exit_code == 2
    assert "--model-dir" in result.output and f"the {use_case} plan" in result.output
