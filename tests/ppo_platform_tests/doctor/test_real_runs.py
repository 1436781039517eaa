"""The doctor on real tiny runs: a healthy CartPole run has no cause, a step 30x too large is
named with a patch that validates, an env that hands over NaN observations is named with the
observation index and the step and no learning-rate advice (docs/guides/diagnostics.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium
import numpy as np
import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import TrainingError
from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import load_spec, load_spec_text
from ppo_platform.tracking import tags as tag
from ppo_platform.training.runner import run_spec

REPO = Path(__file__).resolve().parents[3]


def cartpole(**overrides: Any) -> Any:
    """specs/cartpole.yaml (rl-zoo's tuned entry) with a small budget."""
    sets = [f"{k}={v}" for k, v in {"evaluation.every_timesteps": 0, **overrides}.items()]
    return load_spec(REPO / "specs" / "cartpole.yaml", sets)


def doctor_json(run_id: str, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["doctor", run_id, "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[: result.stdout.rindex("}") + 1])


@pytest.mark.slow
def test_a_healthy_cartpole_run_has_no_cause(shared_home: Path) -> None:
    result = run_spec(cartpole(**{"budget.total_timesteps": 8192}))
    assert result.status == "FINISHED" and result.top_cause == ""
    assert "doctor:" not in result.summary()
    assert doctor_json(result.run_id)["causes"] == []
    client = MlflowClient(get_settings().tracking_uri)
    stored = Path(client.download_artifacts(result.run_id, "diagnostics/diagnosis.json"))
    assert json.loads(stored.read_text())["causes"] == []
    assert client.get_run(result.run_id).data.tags[tag.TOP_CAUSE] == ""


@pytest.mark.slow
def test_a_step_30x_too_large_is_named_and_its_patch_validates(
    shared_home: Path, tmp_path: Path
) -> None:
    # The zoo's constant LR would be 1e-3: 0.03 is 30x, with K 30 on minibatches of 64.
    spec = cartpole(
        **{
            "budget.total_timesteps": 6144,
            "update.learning_rate": 0.03,
            "update.minibatch_size": 64,
            "update.epochs": 30,
        }
    )
    events: list[Any] = []
    result = run_spec(spec, on_progress=events.append)
    assert result.top_cause == "step_too_large"
    alerts = [event.message for event in events if event.kind == "alert"]
    assert any("[doctor: likely step_too_large: " in message for message in alerts), alerts
    assert "doctor: step_too_large" in result.summary()
    diagnosis = doctor_json(result.run_id, "--write", str(tmp_path / "fixed.yaml"))
    top = diagnosis["causes"][0]
    assert top["cause"] == "step_too_large" and top["evidence"][0]["value"] > 0.1
    assert 1e-4 < top["patch"]["update.learning_rate.start"] < 0.03 / 2
    fixed = load_spec(tmp_path / "fixed.yaml")  # validates
    assert fixed.update.learning_rate.start == top["patch"]["update.learning_rate.start"]
    assert fixed.update.epochs == 10 and fixed.env.id == "CartPole-v1"


@pytest.mark.slow
def test_a_run_of_two_updates_is_not_judged_with_the_reason(shared_home: Path) -> None:
    # specs/cartpole.yaml collects 8 envs x 32 steps = 256 transitions per update.
    result = run_spec(cartpole(**{"budget.total_timesteps": 512}))
    assert result.status == "FINISHED" and result.top_cause == ""
    diagnosis = doctor_json(result.run_id)
    assert diagnosis["causes"] == []
    assert diagnosis["thin_evidence"].startswith(
        "the run logged 2 update(s); a cause is judged on 5 at least"
    )
    result_text = CliRunner().invoke(app, ["doctor", result.run_id]).output
    assert "not judged: the run logged 2 update(s)" in result_text


class NanObservationEnv(gymnasium.Env):  # type: ignore[type-arg]
    """CartPole-like, except that observation index 2 turns NaN from the 40th step on."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self) -> None:
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> Any:
        super().reset(seed=seed)
        return np.zeros(4, dtype=np.float32), {}

    def step(self, action: Any) -> Any:
        self.steps += 1
        obs = np.full(4, 0.1, dtype=np.float32)
        if self.steps >= 40:
            obs[2] = np.nan
        return obs, 1.0, False, self.steps % 25 == 0, {}


def test_nan_observations_name_the_index_and_the_step(shared_home: Path) -> None:
    text = """name: nan-env
env: {id: NanObservation-v0, n_envs: 1, vectorization: dummy}
rollout: {n_steps: 16}
update: {epochs: 2, minibatch_size: 16}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 0, episodes: 1}
"""
    with pytest.raises(TrainingError) as caught:
        run_spec(load_spec_text(text, "nan"), make_env=NanObservationEnv)
    message = str(caught.value)
    assert "observation index 2" in message and "step 40" in message
    assert "Lower the learning rate" not in message and "No learning rate fixes this" in message
    client = MlflowClient(get_settings().tracking_uri)
    run = client.search_runs(
        [client.get_experiment_by_name("nan-env").experiment_id]  # type: ignore[union-attr]
    )[0]
    assert run.info.status == "FAILED"
    assert run.data.tags[tag.FAILURE_KIND] == "non_finite_observation"
    top = doctor_json(run.info.run_id)["causes"][0]
    assert top["cause"] == "observations_not_finite" and top["first_step"] == 40
    assert top["patch"] == {} and "observation index 2" in top["advice"]


def test_a_malformed_or_unknown_run_id_exits_2(shared_home: Path) -> None:
    malformed = CliRunner().invoke(app, ["doctor", "not-a-run"])
    unknown = CliRunner().invoke(app, ["doctor", "0123abcd" * 4])
    assert malformed.exit_code == unknown.exit_code == 2
    assert "RUN_ID = 'not-a-run': is not an MLflow run id" in malformed.output
    assert f"no MLflow run '{'0123abcd' * 4}'" in unknown.output


class NanRewardEnv(NanObservationEnv):
    """Finite observations; the reward turns NaN from the 40th step on."""

    def step(self, action: Any) -> Any:
        _, _, terminated, truncated, info = super().step(action)
        return (
            np.full(4, 0.1, dtype=np.float32),
            (np.nan if self.steps >= 40 else 1.0),
            terminated,
            truncated,
            info,
        )


def test_nan_rewards_are_the_envs_fault(shared_home: Path) -> None:
    text = """name: nan-reward
env: {id: NanReward-v0, n_envs: 1, vectorization: dummy}
rollout: {n_steps: 16}
update: {epochs: 2, minibatch_size: 16}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 0, episodes: 1}
"""
    with pytest.raises(TrainingError) as caught:
        run_spec(load_spec_text(text, "nan"), make_env=NanRewardEnv)
    assert "non-finite reward" in str(caught.value) and "step 40" in str(caught.value)
    client = MlflowClient(get_settings().tracking_uri)
    experiment = client.get_experiment_by_name("nan-reward")
    run = client.search_runs([experiment.experiment_id])[0]  # type: ignore[union-attr]
    assert run.data.tags[tag.TOP_CAUSE] == "rewards_not_finite"
