"""The demo spec trains with each advantage estimator and each objective from a clean LM
folder (nothing downloaded): a tiny budget end to end, an MLflow run like any other."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"
TINY = [
    "--set", "budget.updates=2",
    "--set", "evaluation.every_updates=0",
    "--set", "evaluation.max_prompts=8",
    "--set", "lm.prompts_per_update=4",
    "--set", "update.minibatch_size=8",
    "--set", "update.epochs=2",
]  # fmt: skip
GROUP = ["--set", "advantage.group_size=4"]
VARIANTS = {
    "grpo": ["--set", "advantage.estimator=grpo", *GROUP],
    "dr_grpo": [
        "--set", "advantage.estimator=grpo", "--set", "advantage.scale_by_std=false", *GROUP
    ],
    "rloo": ["--set", "advantage.estimator=rloo", *GROUP],
    "gspo": ["--set", "advantage.estimator=grpo", *GROUP, "--set", "surrogate.objective=gspo"],
    "cispo": [
        "--set", "advantage.estimator=rloo", *GROUP, "--set", "surrogate.objective=cispo",
        "--set", "surrogate.clip.high=0.28",
    ],
    "grpo_kl_loss": [
        "--set", "advantage.estimator=grpo", *GROUP, "--set", "lm.kl.placement=loss",
        "--set", "lm.kl.estimator=k3",
    ],
    "rloo_beta_0": ["--set", "advantage.estimator=rloo", *GROUP, "--set", "lm.kl.beta=0"],
}  # fmt: skip
KL_WORDS = {
    "grpo_kl_loss": "k3 in the loss, fixed beta 0.05",
    "rloo_beta_0": "beta 0: no KL term",
    "grpo": "k1 in the reward (r_t -= beta KL_t), fixed beta 0.05",
}
OBJECTIVE_WORDS = {"gspo": "GSPO", "cispo": "CISPO", "grpo": "PPO-Clip per token"}


@pytest.fixture(scope="module")
def demo_home(shared_home: Path) -> Path:
    result = CliRunner().invoke(app, ["lm", "init-demo", "--sft-steps", "5"])
    assert result.exit_code == 0, result.output
    return shared_home


def finished_run(home: Path, name: str):
    client = MlflowClient(f"sqlite:///{(home / 'mlflow.db').resolve()}")
    (experiment,) = [e for e in client.search_experiments() if e.name == name]
    (run,) = client.search_runs([experiment.experiment_id])
    return client, run


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_the_demo_trains_with_each_estimator_and_objective(demo_home, variant):
    name = f"lm-{variant.replace('_', '-')}"
    args = ["run", str(SPEC), "--quiet", *TINY, *VARIANTS[variant], "--set", f"name={name}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    client, run = finished_run(demo_home, name)
    assert run.info.status == "FINISHED"
    history = client.get_metric_history(run.info.run_id, "lm/reward_mean")
    assert [m.step for m in history] == [1, 2]
    metrics = run.data.metrics
    assert "train/value_loss" not in metrics and "train/explained_variance" not in metrics
    assert 0.0 <= metrics["lm/group_zero_spread_fraction"] <= 1.0
    tags = run.data.tags
    assert "no value head" in tags["ppo_platform.resolved.advantage"]
    assert tags["ppo_platform.resolved.model.value_head_parameters"].startswith("none")
    objective = tags["ppo_platform.resolved.objective"]
    assert OBJECTIVE_WORDS.get(variant, "PPO-Clip") in objective
    if variant in KL_WORDS:
        assert tags["ppo_platform.resolved.kl"].startswith(KL_WORDS[variant])
    if variant == "grpo_kl_loss":
        assert "train/kl_loss" in metrics and "lm/kl_penalty_mean" not in metrics
    if variant == "cispo":
        assert "ratio in [0.8, 1.28] (Clip-Higher)" in objective
    models = {a.path for a in client.list_artifacts(run.info.run_id, "model")}
    assert "model/model.safetensors" in models and "model/value_head.pt" not in models


def _histories(client: MlflowClient, run) -> dict[str, list[tuple[int, float]]]:
    """Every metric's (step, value) history but the timings."""
    return {
        name: sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, name))
        for name in run.data.metrics
        if not name.startswith("time/")
    }


@pytest.mark.slow
def test_a_seed_trains_the_same_numbers_in_two_processes(demo_home):
    # The same spec and seed in two fresh processes, one after the other: every metric of
    # every update (rewards, losses, KL, the held-out accuracy) the same to the last bit.
    env = {**os.environ, "PPO_PLATFORM_HOME": str(demo_home)}
    runs = []
    for name in ("lm-again-1", "lm-again-2"):
        args = [*TINY, *VARIANTS["grpo"], "--set", "budget.updates=4", "--set", f"name={name}"]
        args += ["--set", "evaluation.every_updates=2", "--set", "update.learning_rate=1e-3"]
        done = subprocess.run(
            [sys.executable, "-m", "ppo_platform.cli", "run", str(SPEC), "--quiet", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
        runs.append(finished_run(demo_home, name))
    (client, first), (_, second) = runs
    histories = _histories(client, first)
    assert [m for m, _ in histories["eval/mean_reward"]] == [2, 4]
    assert len(histories["lm/reward_mean"]) == 4
    assert histories == _histories(client, second)
