"""`algorithm:` picks the trainer: ppo, ppo_kl and a2c built, loaded and run end to end."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from mlflow.tracking import MlflowClient
from stable_baselines3.common.env_util import make_vec_env

from ppo_platform.errors import SpecError
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec, load_spec_text, validate_data
from ppo_platform.spec.rules import A2C_IGNORED_FIELDS
from ppo_platform.trainers.a2c import PlatformA2C
from ppo_platform.trainers.policy_objectives import KLPenaltyObjective
from ppo_platform.trainers.ppo import PlatformPPO, epoch_kl_name
from ppo_platform.training.algorithms import a2c_kwargs, build_model, load_model
from ppo_platform.training.runner import RunResult, run_spec

REPO = Path(__file__).resolve().parents[3]
CLASSES = {"ppo": PlatformPPO, "ppo_kl": PlatformPPO, "a2c": PlatformA2C}
QUANTILES = [f"train/ratio_{q}" for q in ("min", "p01", "p50", "p99", "max")]
# Short real runs: a few thousand CartPole steps, evaluated once at the end.
E2E_OVERRIDES = [
    "budget.total_timesteps=3072",
    "evaluation.every_timesteps=0",
    "evaluation.episodes=2",
    "checkpoints.every_timesteps=0",
]


def spec_for(algorithm: str, **extra: Any) -> ExperimentSpec:
    data: dict[str, Any] = {
        "name": "t",
        "env": {"id": "CartPole-v1", "n_envs": 2},
        "algorithm": algorithm,
        "rollout": {"n_steps": 32},
        **extra,
    }
    if algorithm != "a2c":
        data["update"] = {"epochs": 2, "minibatch_size": 32}
    return validate_data(data)


def small_env() -> Any:
    return make_vec_env("CartPole-v1", n_envs=2, seed=0)


# --- mapping -----------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", list(CLASSES))
def test_build_model_picks_the_class_of_the_algorithm(algorithm: str) -> None:
    assert type(build_model(spec_for(algorithm), small_env())) is CLASSES[algorithm]


def test_ppo_kl_gets_the_kl_penalty_of_the_spec() -> None:
    spec = spec_for("ppo_kl", kl_penalty={"target": 0.03, "beta_init": 0.5, "rule": "paper"})
    objective = build_model(spec, small_env()).objective  # type: ignore[attr-defined]
    assert isinstance(objective, KLPenaltyObjective)
    controller = objective.controller
    assert (controller.target, controller.beta, controller.rule) == (0.03, 0.5, "paper")


def test_a2c_gets_the_fields_that_apply_to_it() -> None:
    spec = spec_for(
        "a2c",
        update={"learning_rate": 7e-4, "max_grad_norm": 0.7},
        surrogate={"value_coef": 0.25, "entropy_coef": 0.01, "normalize_advantage": False},
        advantage={"gamma": 0.95, "gae_lambda": 1.0},
    )
    model = build_model(spec, small_env())
    assert (model.n_steps, model.gamma, model.gae_lambda) == (32, 0.95, 1.0)
    assert (model.vf_coef, model.ent_coef, model.max_grad_norm) == (0.25, 0.01, 0.7)
    assert model.normalize_advantage is False
    assert model.lr_schedule(1.0) == 7e-4


def test_a2c_keeps_sb3s_rmsprop_optimizer() -> None:
    model = build_model(spec_for("a2c"), small_env())
    assert isinstance(model.policy.optimizer, torch.optim.RMSprop)


def test_a2c_kwargs_carry_no_ppo_only_argument() -> None:
    kwargs = a2c_kwargs(spec_for("a2c"))
    assert not {"batch_size", "n_epochs", "clip_range", "clip_range_vf", "target_kl"} & set(kwargs)


@pytest.mark.parametrize("algorithm", list(CLASSES))
def test_load_model_restores_the_class_of_the_algorithm(algorithm: str, tmp_path: Path) -> None:
    spec = spec_for(algorithm)
    model = build_model(spec, small_env())
    model.save(tmp_path / "model.zip")
    loaded = load_model(spec, str(tmp_path / "model.zip"), small_env())
    assert type(loaded) is CLASSES[algorithm]
    for name, value in model.policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], value)


# --- a2c refuses the fields it would ignore ------------------------------------------------

A2C_SPEC = "name: run\nenv: CartPole-v1\nalgorithm: a2c\n"
NOT_DEFAULT = {
    "update.epochs": "update:\n  epochs: 4\n",
    "update.minibatch_size": "update:\n  minibatch_size: 32\n",
    "surrogate.clip_epsilon": "surrogate:\n  clip_epsilon: {start: 0.2, schedule: linear}\n",
    "surrogate.clip_value": "surrogate:\n  clip_value: 0.2\n",
    "surrogate.target_kl": "surrogate:\n  target_kl: 0.02\n",
    "kl_penalty.target": "kl_penalty:\n  target: 0.05\n",
    "kl_penalty.beta_init": "kl_penalty:\n  beta_init: 2.0\n",
    "kl_penalty.rule": "kl_penalty:\n  rule: paper\n",
}


def test_every_ignored_field_has_a_refusal_case() -> None:
    assert set(NOT_DEFAULT) == set(A2C_IGNORED_FIELDS)


@pytest.mark.parametrize("path", list(NOT_DEFAULT))
def test_a2c_refuses_a_ppo_only_field_set_away_from_its_default(path: str) -> None:
    with pytest.raises(SpecError) as caught:
        load_spec_text(A2C_SPEC + NOT_DEFAULT[path], "spec.yaml")
    (issue,) = caught.value.issues
    assert issue.path == path
    assert "does not apply to algorithm: a2c" in issue.message
    assert issue.line == 5 and issue.fix and path in issue.fix


def test_a2c_accepts_ppo_only_fields_left_at_their_defaults() -> None:
    # A resolved spec (stored with every run, used to resume) spells out every default.
    text = (
        A2C_SPEC + "update:\n  epochs: 10\n  minibatch_size: 64\nsurrogate:\n  clip_epsilon: 0.2\n"
    )
    assert load_spec_text(text, "spec.yaml").algorithm == "a2c"


def test_a2c_rollout_may_be_smaller_than_the_default_minibatch() -> None:
    # A2C has no minibatches: 1 env x 5 steps is a valid A2C rollout.
    assert load_spec_text(A2C_SPEC + "rollout:\n  n_steps: 5\n", "spec.yaml").batch_size == 5


@pytest.mark.parametrize("algorithm", ["ppo", "ppo_kl"])
def test_ppo_algorithms_keep_their_ppo_only_fields(algorithm: str) -> None:
    text = f"name: run\nenv: CartPole-v1\nalgorithm: {algorithm}\nsurrogate:\n  target_kl: 0.02\n"
    assert load_spec_text(text, "spec.yaml").surrogate.target_kl == 0.02


@pytest.mark.parametrize("name", ["cartpole_kl.yaml", "gridworld_a2c.yaml"])
def test_shipped_spec_is_valid(name: str) -> None:
    assert load_spec(REPO / "specs" / name).algorithm in ("ppo_kl", "a2c")


# --- end to end through run_spec, read back from MLflow -------------------------------------


def metric_keys(run_id: str) -> set[str]:
    return set(MlflowClient(get_settings().tracking_uri).get_run(run_id).data.metrics)


def history(run_id: str, key: str) -> list[float]:
    client = MlflowClient(get_settings().tracking_uri)
    return [m.value for m in sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)]


@pytest.fixture(scope="module")
def ppo_kl_run(shared_home: Path) -> tuple[ExperimentSpec, RunResult]:
    spec = load_spec(REPO / "specs" / "cartpole_kl.yaml", E2E_OVERRIDES)
    return spec, run_spec(spec)


@pytest.fixture(scope="module")
def a2c_run(shared_home: Path) -> tuple[ExperimentSpec, RunResult]:
    spec = load_spec(REPO / "specs" / "gridworld_a2c.yaml", [*E2E_OVERRIDES, "env.id=CartPole-v1"])
    return spec, run_spec(spec)


@pytest.mark.slow
def test_ppo_kl_spec_trains_cartpole_to_completion(ppo_kl_run) -> None:
    _, result = ppo_kl_run
    assert result.outcome == "completed" and result.timesteps >= 3072
    assert result.final_eval_mean is not None and result.final_eval_mean > 0


@pytest.mark.slow
def test_ppo_kl_run_logs_beta_every_update(ppo_kl_run) -> None:
    spec, result = ppo_kl_run
    betas = history(result.run_id, "train/kl_beta")
    updates = result.timesteps // spec.batch_size
    assert len(betas) == updates
    assert betas[0] == spec.kl_penalty.beta_init
    assert all(b > 0 and math.isfinite(b) for b in betas)


@pytest.mark.slow
def test_ppo_kl_run_logs_ratio_quantiles_and_per_epoch_kl(ppo_kl_run) -> None:
    spec, result = ppo_kl_run
    keys = metric_keys(result.run_id)
    epochs = {epoch_kl_name(e) for e in range(1, spec.update.epochs + 1)}
    assert set(QUANTILES) | epochs <= keys
    assert epoch_kl_name(spec.update.epochs + 1) not in keys
    last = [history(result.run_id, q)[-1] for q in QUANTILES]
    assert last == sorted(last)


@pytest.mark.slow
def test_ppo_kl_run_logs_update_diagnostics(ppo_kl_run) -> None:
    _, result = ppo_kl_run
    assert {
        "train/approx_kl",
        "train/clip_fraction",
        "train/grad_norm",
        "train/learning_rate",
        "train/explained_variance",
        "train/entropy_loss",
        "train/value_loss",
        "train/policy_gradient_loss",
        "train/loss",
        "train/clip_range",
    } <= metric_keys(result.run_id)


@pytest.mark.slow
def test_a2c_spec_trains_cartpole_to_completion(a2c_run) -> None:
    _, result = a2c_run
    assert result.outcome == "completed" and result.timesteps >= 3072
    assert result.final_eval_mean is not None and result.final_eval_mean > 0


@pytest.mark.slow
def test_a2c_run_logs_the_diagnostics_that_apply(a2c_run) -> None:
    _, result = a2c_run
    keys = metric_keys(result.run_id)
    assert {
        "train/grad_norm",
        "train/explained_variance",
        "train/value_loss",
        "train/policy_gradient_loss",
        "train/entropy_loss",
        "train/loss",
        "train/learning_rate",
        "rollout/ep_rew_mean",
        "eval/mean_reward",
    } <= keys
    assert not {k for k in keys if k.startswith(("train/approx_kl", "train/clip", "train/ratio"))}


@pytest.mark.slow
def test_a2c_run_raises_no_alert_for_signals_it_lacks(a2c_run) -> None:
    _, result = a2c_run
    keys = metric_keys(result.run_id)
    assert not {
        k
        for k in keys
        if k.startswith(("diagnostics/alerts/approx_kl", "diagnostics/alerts/clip_fraction"))
    }
