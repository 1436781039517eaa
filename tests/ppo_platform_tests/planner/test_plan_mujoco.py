"""The planner's MuJoCo rule: continuous control of an unbounded (physics-simulator) state plans
rl-baselines3-zoo's tuned MuJoCo settings; small bounded control tasks keep their own rule;
Atari plans evaluate with sampled actions."""

from __future__ import annotations

import pytest

from ppo_platform.planner import plan_experiment
from ppo_platform.planner.use_cases import SIMULATOR
from tests.ppo_platform_tests.planner.test_plan import IMAGE_ENV_ID

pytest.importorskip("mujoco")


@pytest.mark.parametrize("env_id", ["HalfCheetah-v5", "Hopper-v5"])
def test_mujoco_envs_plan_the_zoos_tuned_mujoco_settings(env_id: str) -> None:
    plan = plan_experiment(env_id, 1_000_000)
    spec = plan.spec
    assert plan.use_case == "continuous-control"
    # rl-baselines3-zoo's tuned HalfCheetah/Hopper/Walker2d/Humanoid: 1 env x 512 steps
    assert (spec.env.n_envs, spec.rollout.n_steps) == (1, 512)
    assert (spec.update.minibatch_size, spec.update.epochs) == (64, 10)
    assert (spec.update.learning_rate.start, spec.update.learning_rate.schedule) == (
        5e-5,
        "constant",
    )
    assert (spec.surrogate.clip_epsilon.start, spec.advantage.gae_lambda) == (0.2, 0.95)
    assert spec.advantage.gamma == 0.99  # 1,000-step episodes
    assert (spec.policy.net_arch, spec.policy.activation) == ([256, 256], "relu")
    assert (spec.policy.log_std_init, spec.policy.ortho_init, spec.policy.use_sde) == (
        -2.0,
        False,
        False,
    )
    assert (spec.env.normalize.obs, spec.env.normalize.reward) == (True, True)
    assert plan.updates == 1954
    assert "no observation feature has finite bounds" in plan.markdown
    assert "log std -2 at the start, no orthogonal init" in plan.markdown
    assert (
        "1 env x 512 steps" in plan.reasons["rollout.n_steps"]
        or "512 steps per update" in (plan.reasons["rollout.n_steps"])
    )


def test_the_mujoco_rule_holds_at_a_small_budget_and_says_what_it_buys() -> None:
    plan = plan_experiment("HalfCheetah-v5", 100_000, "continuous-control")
    assert (plan.spec.env.n_envs, plan.spec.rollout.n_steps, plan.updates) == (1, 512, 196)
    assert plan.warnings == ()
    assert "2e-5 to 1e-4" in plan.reasons["update.learning_rate"]


def test_bounded_control_tasks_keep_the_small_continuous_rule() -> None:
    for env_id in ("Pendulum-v1", "MountainCarContinuous-v0"):
        spec = plan_experiment(env_id, 100_000).spec
        assert spec.env.n_envs == 4 and spec.policy.use_sde
        assert spec.policy.net_arch == [64, 64] and spec.policy.log_std_init == 0.0
    assert SIMULATOR.name == "continuous-control"  # the same use case, the simulator's values


def test_the_mujoco_plan_widens_the_healthy_kl_band_and_says_why() -> None:
    plan = plan_experiment("HalfCheetah-v5", 100_000)
    assert plan.spec.diagnostics.kl_healthy_max == 0.07
    assert "0.03-0.07" in plan.reasons["diagnostics.kl_healthy_max"]
    assert "| 0 to 0.07 |" in plan.markdown
    assert plan_experiment("Pendulum-v1", 100_000).spec.diagnostics.kl_healthy_max == 0.02


def test_the_mujoco_plan_raises_the_kl_alert_its_known_good_runs_cross_routinely() -> None:
    plan = plan_experiment("Hopper-v5", 1_000_000)
    assert plan.spec.diagnostics.kl_alert == 0.15
    assert "15 of the 19 collapses" in plan.reasons["diagnostics.kl_alert"]
    assert "| above 0.15 " in plan.markdown and "KL alert above 0.15" in plan.markdown
    for env_id in ("CartPole-v1", "Pendulum-v1", "ALE/Breakout-v5"):
        planned = plan_experiment(env_id, 100_000)
        assert planned.spec.diagnostics.kl_alert == 0.1
        assert "lessons' alert level" in planned.reasons["diagnostics.kl_alert"]


def test_atari_plans_evaluate_with_sampled_actions() -> None:
    assert plan_experiment(IMAGE_ENV_ID, 10_000_000).spec.evaluation.deterministic is False
    assert plan_experiment("CartPole-v1", 100_000).spec.evaluation.deterministic is True
