"""Our PPO update: identical to stock SB3 on the same rollout, and its per-update diagnostics."""

from __future__ import annotations

import copy
import itertools
import math
from typing import Any

import pytest
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.utils import LinearSchedule
from trainer_rollouts import train_seeded, with_rollout

from ppo_platform.trainers.errors import NonFiniteError
from ppo_platform.trainers.losses import LossError
from ppo_platform.trainers.ppo import PlatformPPO, epoch_kl_name, kl_penalty_ppo

SEED = 3
# 2 envs x 64 steps = 128 transitions, 4 minibatches of 32 per epoch: shuffling matters.
BASE: dict[str, Any] = {
    "n_steps": 64,
    "batch_size": 32,
    "n_epochs": 4,
    "learning_rate": LinearSchedule(3e-3, 0.0, end_fraction=1.0),
    "clip_range": LinearSchedule(0.2, 0.0, end_fraction=1.0),
}
CASES: dict[str, tuple[str, dict[str, Any], float]] = {
    # name: (env id, extra PPO kwargs, progress_remaining at the update)
    "discrete": ("CartPole-v1", {}, 0.7),
    "continuous": ("Pendulum-v1", {}, 0.7),
    "value_clipping": ("CartPole-v1", {"clip_range_vf": 0.1}, 0.7),
    "target_kl_early_stop": ("CartPole-v1", {"target_kl": 1e-4}, 0.7),
    "clip_range_decayed_to_zero": ("CartPole-v1", {"learning_rate": 3e-3}, 0.0),
    "odd_last_minibatch": ("CartPole-v1", {"batch_size": 48}, 0.7),
    # ppo_platform.trainers.fast.manual's gradients with an entropy bonus and with ReLU layers
    "entropy_bonus": ("CartPole-v1", {"ent_coef": 0.01}, 0.7),
    "relu": ("CartPole-v1", {"policy_kwargs": {"activation_fn": torch.nn.ReLU}}, 0.7),
    # and with a Gaussian head
    "continuous_value_clipping": ("Pendulum-v1", {"clip_range_vf": 0.1}, 0.7),
    "continuous_relu_entropy": (
        "Pendulum-v1",
        {"ent_coef": 0.01, "policy_kwargs": {"activation_fn": torch.nn.ReLU}},
        0.7,
    ),
}


def same_start(
    reference: OnPolicyAlgorithm, cls: type[OnPolicyAlgorithm], env_id: str, **kwargs: Any
) -> OnPolicyAlgorithm:
    """A `cls` model holding exactly the reference's parameters, optimizer state and rollout."""
    env = make_vec_env(env_id, n_envs=2, seed=SEED)
    model = cls("MlpPolicy", env, seed=SEED, device="cpu", **kwargs)
    model._setup_learn(total_timesteps=10_000, callback=None)
    model.policy.load_state_dict(reference.policy.state_dict())
    # Both optimizers are fresh (no state yet); ours keeps its foreach setting.
    assert model.policy.optimizer.param_groups[0]["foreach"] is (
        True if model.fast_paths.on else None
    )
    model.rollout_buffer = copy.deepcopy(reference.rollout_buffer)
    model._current_progress_remaining = reference._current_progress_remaining
    return model


def stock_and_ours(case: str) -> tuple[dict[str, Any], OnPolicyAlgorithm, OnPolicyAlgorithm]:
    env_id, extra, progress = CASES[case]
    kwargs = {**BASE, **extra}
    stock = with_rollout(PPO, env_id, seed=SEED, **kwargs)
    stock._current_progress_remaining = progress
    ours = same_start(stock, PlatformPPO, env_id, **kwargs)
    return kwargs, stock, ours


# SB3 warns, rightly, that 128 is not a multiple of 48: that truncated minibatch is the point.
UNEVEN = pytest.mark.filterwarnings("ignore:You have specified a mini-batch size")


@pytest.mark.parametrize(
    "case", [pytest.param(c, marks=UNEVEN) if c == "odd_last_minibatch" else c for c in CASES]
)
def test_one_update_gives_the_same_parameters_as_stock_sb3_ppo(case: str) -> None:
    _, stock, ours = stock_and_ours(case)
    before = {k: v.clone() for k, v in stock.policy.state_dict().items()}
    train_seeded(stock)
    train_seeded(ours)
    theirs, mine = stock.policy.state_dict(), ours.policy.state_dict()
    assert any(not torch.equal(before[k], theirs[k]) for k in theirs)  # the update did something
    for name, value in theirs.items():
        assert torch.equal(mine[name], value), name  # bit for bit


@pytest.mark.parametrize(
    "key",
    [
        "train/approx_kl",
        "train/clip_fraction",
        "train/value_loss",
        "train/policy_gradient_loss",
        "train/entropy_loss",
        "train/loss",
        "train/explained_variance",
    ],
)
def test_diagnostics_match_stock_sb3_definitions(key: str) -> None:
    _, stock, ours = stock_and_ours("discrete")
    expected = train_seeded(stock)[key]
    # Explained variance: SB3 computes it in float32, we in float64.
    tolerance = 1e-5 if key == "train/explained_variance" else 1e-7
    assert train_seeded(ours)[key] == pytest.approx(expected, rel=1e-5, abs=tolerance)


def test_early_stop_epoch_is_the_epoch_where_target_kl_fired() -> None:
    _, stock, ours = stock_and_ours("target_kl_early_stop")
    train_seeded(stock)
    metrics = train_seeded(ours)
    assert metrics["train/early_stop_epoch"] == stock._n_updates == ours._n_updates
    assert metrics["train/early_stop_epoch"] < BASE["n_epochs"]


def test_no_early_stop_epoch_without_target_kl() -> None:
    _, _, ours = stock_and_ours("discrete")
    assert "train/early_stop_epoch" not in train_seeded(ours)


def test_every_epoch_reports_its_own_approx_kl() -> None:
    _, _, ours = stock_and_ours("discrete")
    metrics = train_seeded(ours)
    kls = [metrics[epoch_kl_name(e)] for e in range(1, BASE["n_epochs"] + 1)]
    assert epoch_kl_name(BASE["n_epochs"] + 1) not in metrics
    assert kls[-1] == metrics["train/approx_kl"]  # the update's KL is where it ended
    assert kls[0] < kls[-1]  # the policy moves away from pi_old epoch after epoch


def test_epoch_kl_names_sort_in_epoch_order() -> None:
    names = [epoch_kl_name(e) for e in range(1, 31)]
    assert names == sorted(names)
    assert names[0] == "train/approx_kl_epoch_01"


def test_ratio_quantiles_are_ordered_around_one() -> None:
    _, _, ours = stock_and_ours("discrete")
    metrics = train_seeded(ours)
    names = ["min", "p01", "p50", "p99", "max"]
    quantiles = [metrics[f"train/ratio_{name}"] for name in names]
    assert quantiles == sorted(quantiles)
    assert quantiles[0] < 1.0 < quantiles[-1]


def test_grad_norm_is_measured_before_clipping() -> None:
    _, _, ours = stock_and_ours("discrete")
    ours.max_grad_norm = 1e-6  # every step is clipped, so a clipped norm would read 1e-6
    assert train_seeded(ours)["train/grad_norm"] > 1e-3


def test_learning_rate_and_clip_range_follow_their_schedules() -> None:
    _, _, ours = stock_and_ours("discrete")
    metrics = train_seeded(ours)
    assert metrics["train/learning_rate"] == pytest.approx(3e-3 * 0.7)
    assert metrics["train/clip_range"] == pytest.approx(0.2 * 0.7)


def test_listeners_get_the_metrics_of_the_update_that_just_ran() -> None:
    seen: list[dict[str, float]] = []
    model = PlatformPPO(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=2, seed=SEED),
        seed=SEED,
        device="cpu",
        n_steps=32,
        batch_size=32,
        n_epochs=2,
        update_listeners=[lambda m, metrics: seen.append(metrics)],
    )
    model.learn(128)
    assert len(seen) == 2 == model.n_updates_done
    assert seen[-1]["train/n_updates"] == 4  # SB3 counts epochs: 2 updates x 2 epochs
    assert {"train/approx_kl_epoch_02", "train/ratio_p99", "train/grad_norm"} <= set(seen[0])


def test_non_finite_parameters_raise_non_finite_error() -> None:
    _, _, ours = stock_and_ours("discrete")
    with torch.no_grad():
        next(iter(ours.policy.parameters())).fill_(math.nan)
    with pytest.raises(NonFiniteError):
        train_seeded(ours)


def test_save_and_load_round_trip_keeps_our_class(tmp_path) -> None:
    _, _, ours = stock_and_ours("discrete")
    ours.save(tmp_path / "model.zip")
    loaded = PlatformPPO.load(tmp_path / "model.zip", device="cpu")
    assert type(loaded) is PlatformPPO
    for name, value in ours.policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], value)


# --- ppo_kl ------------------------------------------------------------------------------


def kl_betas(kl_target: float, timesteps: int = 1024, **kwargs: Any) -> list[float]:
    """Train ppo_kl on CartPole for a few updates; the beta each update used, then the final."""
    betas: list[float] = []

    def on_update(model: Any, metrics: dict[str, float]) -> None:
        betas.append(metrics["train/kl_beta"])

    model = kl_penalty_ppo(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=2, seed=SEED),
        seed=SEED,
        device="cpu",
        n_steps=64,
        batch_size=64,
        n_epochs=4,
        learning_rate=1e-3,
        kl_target=kl_target,
        kl_beta_init=1.0,
        update_listeners=[on_update],
        **kwargs,
    )
    model.learn(timesteps)
    return [*betas, model.objective.controller.beta]


def test_kl_beta_grows_when_the_kl_stays_above_a_tiny_target() -> None:
    betas = kl_betas(kl_target=1e-7)
    assert betas[0] == 1.0
    assert all(b2 == 2 * b1 for b1, b2 in itertools.pairwise(betas))
    assert betas[-1] == 2.0 ** (len(betas) - 1)


def test_kl_beta_shrinks_when_the_kl_stays_below_a_huge_target() -> None:
    betas = kl_betas(kl_target=10.0)
    assert all(b2 == b1 / 2 for b1, b2 in itertools.pairwise(betas))
    assert betas[-1] < 1.0


def test_paper_rule_is_used_when_asked() -> None:
    model = kl_penalty_ppo(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=1, seed=SEED),
        device="cpu",
        kl_rule="paper",
        kl_target=0.02,
        kl_beta_init=3.0,
    )
    assert (model.objective.controller.rule, model.objective.controller.target) == ("paper", 0.02)
    assert model.objective.controller.beta == 3.0


def test_kl_penalty_update_does_not_clip() -> None:
    # With eps tiny, clipping would freeze the policy term; the KL objective must still move it.
    kwargs = {**BASE, "clip_range": 1e-6, "n_epochs": 1}
    stock = with_rollout(PPO, "CartPole-v1", seed=SEED, **kwargs)
    clipped = same_start(stock, PlatformPPO, "CartPole-v1", **kwargs)
    penalized = same_start(stock, kl_penalty_ppo, "CartPole-v1", kl_beta_init=1e-8, **kwargs)
    assert train_seeded(penalized)["train/policy_gradient_loss"] != pytest.approx(
        train_seeded(clipped)["train/policy_gradient_loss"], rel=1e-3
    )


def test_kl_controller_state_survives_save_and_load(tmp_path) -> None:
    model = kl_penalty_ppo(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=1, seed=SEED),
        device="cpu",
        kl_beta_init=1.0,
    )
    model.objective.controller.update(1.0)  # KL far above target: beta doubles
    model.save(tmp_path / "kl.zip")
    loaded = PlatformPPO.load(tmp_path / "kl.zip", device="cpu")
    assert loaded.objective.controller.beta == 2.0


def test_bad_kl_arguments_fail_before_training() -> None:
    with pytest.raises(LossError, match="target"):
        kl_penalty_ppo("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), kl_target=0.0)
