"""Each cause planted in a synthetic run is named first, with its evidence and patch; a
healthy run has no cause (docs/guides/diagnostics.md, "The doctor")."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from series_factory import CARTPOLE, STEP, curve, flat_return, healthy, healthy_lm, wiggle

from ppo_platform.doctor import CAUSES, Failure, RunFacts, diagnose

PENDULUM = replace(CARTPOLE, env_id="Pendulum-v1", continuous=True, gamma=0.9)
LM = RunFacts(algorithm="ppo_lm", learning_rate=1e-5, kl_target=2.0, kl_beta=0.05)


def top(series, facts=CARTPOLE):  # type: ignore[no-untyped-def]
    diagnosis = diagnose(series, facts)
    assert diagnosis.causes, "no cause found"
    return diagnosis.causes[0]


def causes(series, facts=CARTPOLE):  # type: ignore[no-untyped-def]
    return {cause.cause for cause in diagnose(series, facts).causes}


def test_vocabulary_is_the_documented_one() -> None:
    assert len(CAUSES) == 20 and len(set(CAUSES)) == 20
    assert CAUSES[0] == "step_too_large" and CAUSES[-1] == "lm_group_no_signal"


@pytest.mark.parametrize("facts", [CARTPOLE, RunFacts()])
def test_a_healthy_run_has_no_cause(facts: RunFacts) -> None:
    assert diagnose(healthy(), facts).causes == []


def test_a_healthy_continuous_run_has_no_cause() -> None:
    assert diagnose(healthy(continuous=True), PENDULUM).causes == []


def test_a_healthy_language_model_run_has_no_cause() -> None:
    assert diagnose(healthy_lm(), LM).causes == []


def test_step_too_large_divides_the_learning_rate_by_the_kl_overshoot() -> None:
    s = healthy()
    curve(lambda i: 0.4, "train/approx_kl_post", s)
    curve(lambda i: 0.6, "train/clip_fraction", s)
    found = top(s)
    assert found.cause == "step_too_large" and found.first_step == STEP
    # KL 0.4 against the healthy middle 0.01: sqrt(40) = 6.32
    assert found.patch == {"update.learning_rate.start": 0.000158, "update.epochs": 10}
    assert found.evidence[0]["metric"] == "train/approx_kl_post"
    assert found.evidence[0]["updates"] == 40


def test_step_too_small_raises_the_learning_rate() -> None:
    s = healthy()
    curve(lambda i: 1e-8, "train/approx_kl_post", s)
    curve(lambda i: 0.0, "train/clip_fraction", s)
    curve(lambda i: 0.0, "train/explained_variance", s)
    flat_return(s)
    found = top(s, replace(CARTPOLE, learning_rate=1e-6))
    assert found.cause == "step_too_small"
    assert found.patch == {"update.learning_rate.start": 0.001}  # 1e-6 x 1000 (the cap)
    assert [c.cause for c in diagnose(s, CARTPOLE).causes] == ["step_too_small"]


def test_step_too_small_is_not_judged_on_an_annealed_schedule() -> None:
    s = healthy()
    curve(lambda i: 1e-8 if i > 36 else 0.01, "train/approx_kl_post", s)
    curve(lambda i: 1e-3 * (1 - i / 40), "train/learning_rate", s)
    assert diagnose(s, CARTPOLE).causes == []


def test_observations_not_finite_from_the_rollout_statistics() -> None:
    s = healthy()
    curve(lambda i: 3.0 if i >= 4 else 0.0, "rollout/obs_nonfinite", s)
    found = top(s)
    assert found.cause == "observations_not_finite" and found.first_step == 5 * STEP
    assert found.patch == {} and "learning rate" in found.advice


def test_observations_not_finite_from_the_failure_names_index_and_step() -> None:
    failure = Failure(
        "observation 2 is nan",
        "NonFiniteObservationError",
        "env",
        1037,
        2,
        "non_finite_observation",
    )
    diagnosis = diagnose({}, replace(CARTPOLE, failure=failure))
    assert [c.cause for c in diagnosis.causes] == ["observations_not_finite"]
    found = diagnosis.causes[0]
    assert found.first_step == 1037 and "observation index 2" in found.advice
    assert "No learning rate fixes this" in found.advice and found.patch == {}


def test_observation_scale_normalizes_observations() -> None:
    s = healthy()
    curve(lambda i: 5000.0, "rollout/obs_abs_max", s)
    found = top(s)
    assert found.cause == "observation_scale" and found.patch == {"env.normalize.obs": True}
    assert diagnose(s, replace(CARTPOLE, normalize_obs=True)).causes == []


def test_rewards_not_finite() -> None:
    s = healthy()
    curve(lambda i: 1.0 if i >= 10 else 0.0, "rollout/reward_nonfinite", s)
    found = top(s)
    assert found.cause == "rewards_not_finite" and found.first_step == 11 * STEP


def test_reward_scale_normalizes_rewards() -> None:
    s = healthy()
    curve(lambda i: 1e4 * (20 + 10 * i), "rollout/ep_rew_mean", s)
    curve(lambda i: 0.0, "train/explained_variance", s)
    curve(lambda i: 1e6, "train/returns_rms", s)
    diagnosis = diagnose(s, CARTPOLE)
    assert [c.cause for c in diagnosis.causes] == ["reward_scale"]  # the critic is its symptom
    assert diagnosis.causes[0].patch == {"env.normalize.reward": True}


def test_critic_not_learning_raises_the_value_coefficient() -> None:
    s = healthy()
    curve(lambda i: 0.01 + 0.01 * math.sin(i), "train/explained_variance", s)
    found = top(s, replace(CARTPOLE, value_coef=0.0))
    assert found.cause == "critic_not_learning" and found.patch == {"surrogate.value_coef": 0.5}
    assert found.first_step == 20 * STEP  # judged from half the budget on


def test_critic_not_judged_when_returns_barely_vary() -> None:
    s = healthy()
    curve(lambda i: -3.0, "train/explained_variance", s)
    curve(lambda i: 1e-4, "train/returns_std", s)  # a solved CartPole: returns ~50 +- 1e-4
    assert diagnose(s, CARTPOLE).causes == []


def test_entropy_collapse_adds_an_entropy_bonus() -> None:
    s = healthy()
    curve(lambda i: -0.69 if i < 4 else -0.01, "train/entropy_loss", s)
    flat_return(s)
    found = top(s)
    assert found.cause == "entropy_collapse" and found.first_step == 5 * STEP
    assert found.patch == {"surrogate.entropy_coef": 0.01}


def test_std_collapse_on_continuous_actions() -> None:
    s = healthy(continuous=True)
    curve(lambda i: 1.0 if i < 4 else 0.01, "train/std", s)
    flat_return(s, -1200.0, 50.0)
    curve(lambda i: 200.0, "rollout/ep_len_mean", s)
    found = top(s, PENDULUM)
    assert found.cause == "std_collapse" and found.patch == {"surrogate.entropy_coef": 0.01}


def test_action_saturation() -> None:
    s = healthy(continuous=True)
    curve(lambda i: 0.85, "rollout/action_clip_fraction", s)
    found = top(s, PENDULUM)
    assert found.cause == "action_saturation" and "rescale_action" in found.advice


def test_no_reward_signal() -> None:
    s = healthy()
    curve(lambda i: -200.0, "rollout/ep_rew_mean", s)
    curve(lambda i: 200.0, "rollout/ep_len_mean", s)
    found = top(s, replace(CARTPOLE, env_id="MountainCar-v0", gamma=0.99))
    assert found.cause == "no_reward_signal" and "-200" in found.advice


def test_horizon_too_short_sets_gamma_from_the_episode_length() -> None:
    s = healthy()
    flat_return(s, 25.0, 2.0)
    curve(lambda i: 200 + wiggle(i, 5), "rollout/ep_len_mean", s)  # 100 horizons of gamma 0.5
    found = top(s, replace(CARTPOLE, gamma=0.5))
    assert found.cause == "horizon_too_short"
    longest = max(value for _, value in s["rollout/ep_len_mean"])
    assert found.patch == {"advantage.gamma": round(1 - 1 / longest, 4)}


def test_a_tuned_short_horizon_on_long_episodes_is_not_a_fault() -> None:
    # Pendulum's 200-step episodes at the zoo's gamma 0.9 (20 horizons): not judged too short,
    # even before the run has learned.
    s = healthy()
    flat_return(s, -1200.0, 50.0)
    curve(lambda i: 200.0, "rollout/ep_len_mean", s)
    assert "horizon_too_short" not in causes(s, replace(CARTPOLE, gamma=0.9))


def test_horizon_too_short_while_the_sampled_return_creeps_but_evaluations_stay_stuck() -> None:
    s = healthy()  # the training return rises ...
    curve(lambda i: 500 + wiggle(i, 5), "rollout/ep_len_mean", s)
    s["eval/mean_reward"] = [(STEP * k, -500.0) for k in (10, 20, 30, 40)]  # ... greedy: never
    assert top(s, replace(CARTPOLE, gamma=0.5)).cause == "horizon_too_short"


def test_a_fixed_beta_whose_kl_stays_near_a_nat_is_no_runaway() -> None:
    s = healthy_lm()
    curve(lambda i: 0.02 * i, "lm/kl_ref", s)  # from 0 (the reference itself) to ~1 nat
    assert "lm_kl_runaway" not in causes(s, replace(LM, kl_target=None))


def test_beta_zero_whose_kl_drifts_past_a_nat_is_flagged_with_a_small_penalty() -> None:
    s = healthy_lm()
    curve(lambda i: 0.05 * i, "lm/kl_ref", s)  # no penalty: the KL climbs past 1 nat
    found = top(s, replace(LM, kl_target=None, kl_beta=0.0))
    assert found.cause == "lm_kl_runaway" and found.patch == {"lm.kl.beta": 0.05}
    assert found.evidence[0]["threshold"] == 1.0 and found.evidence[0]["value"] > 1.0
    assert "beta 0" in found.evidence[0]["note"]
    # the same KL with the penalty on (beta 0.05, no target) is within its 10-nat bound
    assert "lm_kl_runaway" not in causes(s, replace(LM, kl_target=None))


def test_beta_zero_whose_kl_stays_under_a_nat_is_not_flagged() -> None:
    s = healthy_lm()
    curve(lambda i: 0.01 * i, "lm/kl_ref", s)
    assert "lm_kl_runaway" not in causes(s, replace(LM, kl_target=None, kl_beta=0.0))


def test_rollout_too_short_lengthens_the_rollout() -> None:
    s = healthy()
    flat_return(s, 60.0, 5.0)
    found = top(s, replace(CARTPOLE, n_steps=2, n_envs=1))
    assert found.cause == "rollout_too_short" and found.patch == {"rollout.n_steps": 256}


def test_env_crash_names_the_env_exception() -> None:
    failure = Failure("boom at step 77", "ValueError", "env", 77, kind="env_crash")
    found = top(healthy(), replace(CARTPOLE, failure=failure))
    assert found.cause == "env_crash" and found.first_step == 77
    assert "ValueError" in found.advice and "boom at step 77" in found.advice


def test_a_trainer_failure_is_not_an_env_crash() -> None:
    failure = Failure("non-finite values after update 3", None, "trainer", 700)
    assert diagnose(healthy(), replace(CARTPOLE, failure=failure)).causes == []


def test_lm_kl_penalty_inert_fixes_beta() -> None:
    s = healthy_lm()
    curve(lambda i: max(0.05 * 0.5**i, 1e-8), "lm/kl_beta", s)
    found = top(s, LM)
    # 0.05 / 2^16 is the first beta at or below 1e-6: update 17
    assert found.cause == "lm_kl_penalty_inert" and found.first_step == 17 * STEP
    assert found.patch == {"lm.kl.target": None}  # beta fixed at the spec's lm.kl.beta
    assert found.evidence[1]["value"] == 0.502  # the median measured KL, under the target 2


def test_lm_kl_runaway_lowers_the_learning_rate() -> None:
    s = healthy_lm()
    curve(lambda i: 0.5 * 1.2**i, "lm/kl_ref", s)
    found = top(s, replace(LM, kl_target=0.5))
    assert found.cause == "lm_kl_runaway" and found.patch["update.learning_rate.start"] < 1e-5


def test_lm_reward_hacking() -> None:
    s = healthy_lm()
    s["eval/mean_reward"] = [(STEP * k, 0.8 - 0.1 * j) for j, k in enumerate((1, 10, 20, 30, 40))]
    found = top(s, LM)
    assert found.cause == "lm_reward_hacking" and found.patch == {"lm.kl.beta": 0.1}


def test_lm_length_collapse() -> None:
    s = healthy_lm()
    curve(lambda i: 16.0 if i < 10 else 1.0, "lm/response_length", s)
    assert top(s, LM).cause == "lm_length_collapse"


def test_missing_signals_are_listed_as_not_judged() -> None:
    s = {k: v for k, v in healthy().items() if not k.startswith("rollout/o")}
    diagnosis = diagnose(s, RunFacts())
    assert diagnosis.causes == []
    not_judged = {n.cause for n in diagnosis.not_judged}
    assert {"observations_not_finite", "observation_scale", "horizon_too_short"} <= not_judged


def _first_update_collapse(s, kl: float = 16.0, clip: float = 0.96):  # type: ignore[no-untyped-def]
    """The issue's class: the first update's KL ~16 (clip fraction 0.96), then entropy 0, KL 0
    and a flat return for the rest of the run."""
    curve(lambda i: kl if i == 0 else 0.0, "train/approx_kl_post", s)
    curve(lambda i: clip if i == 0 else 0.0, "train/clip_fraction", s)
    curve(lambda i: -0.69 if i == 0 else -1e-6, "train/entropy_loss", s)
    flat_return(s)
    return s


def test_one_update_far_past_its_alarm_then_collapse_is_a_step_too_large() -> None:
    diagnosis = diagnose(_first_update_collapse(healthy()), CARTPOLE)
    found = diagnosis.causes[0]
    assert found.cause == "step_too_large" and found.first_step == STEP
    assert found.evidence[0]["metric"] == "train/approx_kl_post"
    assert found.evidence[0]["value"] == 16.0 and found.evidence[0]["updates"] == 1
    # sqrt(16 / 0.01) = 40: the learning rate 1e-3 divided by 40
    assert found.patch == {"update.learning_rate.start": 2.5e-05}
    # What the collapse explains is not named beside it.
    assert {c.cause for c in diagnosis.causes}.isdisjoint(
        {"no_reward_signal", "entropy_collapse", "critic_not_learning"}
    )


def test_the_event_needs_the_collapse_and_a_kl_far_past_the_alarm() -> None:
    no_collapse = healthy()
    curve(lambda i: 16.0 if i == 0 else 0.01, "train/approx_kl_post", no_collapse)
    assert "step_too_large" not in causes(no_collapse)  # one spike the run recovered from
    # 5x the alert, clip fraction 0.55 (the largest seen in known-good runs): no event
    assert "step_too_large" not in causes(_first_update_collapse(healthy(), 0.5, 0.55))


def test_a_continuous_run_collapses_through_its_std() -> None:
    s = healthy(continuous=True)
    curve(lambda i: 3.0 if i == 2 else 0.001, "train/approx_kl_post", s)
    curve(lambda i: 1.0 if i <= 2 else 0.001, "train/std", s)
    flat_return(s)
    found = top(s, PENDULUM)
    assert found.cause == "step_too_large" and found.first_step == 3 * STEP
    assert found.evidence[-1]["metric"] == "train/std"


def test_lm_length_drifting_to_the_limit() -> None:
    s = healthy_lm()
    curve(lambda i: min(16.0, 8.0 + 0.4 * i), "lm/response_length", s)
    found = top(s, replace(LM, max_new_tokens=16))
    assert found.cause == "lm_length_at_limit" and found.first_step == 19 * STEP
    assert "lm_length_at_limit" not in causes(s, LM)  # the limit unknown: not judged


def test_a_length_that_started_at_the_limit_is_no_drift() -> None:
    s = healthy_lm()
    curve(lambda i: 16.0, "lm/response_length", s)
    assert "lm_length_at_limit" not in causes(s, replace(LM, max_new_tokens=16))


def test_lm_group_no_signal_when_groups_score_alike() -> None:
    s = healthy_lm()
    curve(lambda i: 0.95 if i >= 5 else 0.3, "lm/group_zero_spread_fraction", s)
    found = top(s, LM)
    assert found.cause == "lm_group_no_signal" and found.first_step == 6 * STEP
    assert found.patch == {"advantage.group_size": 16}
    curve(lambda i: 0.3 + wiggle(i, 0.1), "lm/group_zero_spread_fraction", s)
    assert "lm_group_no_signal" not in causes(s, LM)
