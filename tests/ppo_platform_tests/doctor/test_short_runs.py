"""A known-good config on a short budget is no fault: a critic still fitting the level of its
targets, a critic judged on too few updates and an untrained Gaussian's spill over a narrow
action range name nothing, while the faults they resemble are still named
(docs/guides/diagnostics.md, "The doctor")."""

from __future__ import annotations

from dataclasses import replace

from series_factory import CARTPOLE, STEP, UPDATES, Series, curve, flat_return, healthy, wiggle

from ppo_platform.doctor import Failure, RunFacts, diagnose

PENDULUM = replace(CARTPOLE, epochs=10, gamma=0.95, n_steps=64, n_envs=4, continuous=True)


def untrained_pendulum(value_loss_share_at_end: float) -> Series:
    """A Pendulum run that has not learned yet (as the planner's spec at 15k steps): the return
    flat at a random policy's, explained variance ~0 late, returns of ~-60 to -100 with a std of
    ~18, the value loss falling from RMS^2 to `value_loss_share_at_end` of it, and half the
    sampled actions clipped from the first rollout on."""
    s = healthy(continuous=True)
    flat_return(s, -1250.0, 30.0)
    curve(lambda i: 200.0, "rollout/ep_len_mean", s)
    curve(lambda i: 0.2 if i < 8 else 0.005 + wiggle(i, 0.003), "train/explained_variance", s)
    curve(lambda i: 60.0 + i, "train/returns_rms", s)
    curve(lambda i: 18.0 + wiggle(i, 3.0), "train/returns_std", s)
    share = lambda i: 0.95 + (value_loss_share_at_end - 0.95) * i / (UPDATES - 1)  # noqa: E731
    curve(lambda i: share(i) * (60.0 + i) ** 2, "train/value_loss", s)
    curve(lambda i: 1.0 + wiggle(i, 0.01), "train/std", s)
    curve(lambda i: 0.55 + wiggle(i, 0.08), "rollout/action_clip_fraction", s)
    return s


def names(series: Series, facts: RunFacts = PENDULUM) -> list[str]:
    return [cause.cause for cause in diagnose(series, facts).causes]


def test_a_critic_still_fitting_its_targets_level_is_no_fault() -> None:
    # the value loss fell from RMS^2 to 5% of it, still ~10x Var(returns): the level first
    assert names(untrained_pendulum(0.05)) == []


def test_a_critic_whose_loss_does_not_fall_is_named() -> None:
    diagnosis = diagnose(untrained_pendulum(0.95), PENDULUM)
    assert [c.cause for c in diagnosis.causes] == ["critic_not_learning"]
    assert diagnosis.causes[0].patch == {"surrogate.value_coef": 1.0}


def test_a_critic_that_fitted_the_level_but_explains_nothing_is_named() -> None:
    s = untrained_pendulum(0.05)  # the loss fell, but to the returns' variance: EV ~0 is real
    curve(lambda i: (0.95 if i < 8 else 1.0) * (18.0 + wiggle(i, 3.0)) ** 2, "train/value_loss", s)
    curve(lambda i: 60.0 * (1.0 if i < 8 else 0.3), "train/returns_rms", s)
    assert names(s) == ["critic_not_learning"]


def test_a_critic_of_ten_updates_is_not_judged() -> None:
    s = {name: points[:10] for name, points in untrained_pendulum(0.95).items()}
    short = replace(PENDULUM, total_timesteps=10 * STEP)
    diagnosis = diagnose(s, short)
    assert diagnosis.causes == []
    (item,) = [n for n in diagnosis.not_judged if n.cause == "critic_not_learning"]
    assert "6 updates in the run's late half" in item.reason


def test_an_untrained_gaussian_clipping_half_its_actions_is_no_fault() -> None:
    # the same share from the first rollout on: the initial std spills over the range
    assert "action_saturation" not in names(untrained_pendulum(0.95))


def test_a_policy_that_leaves_the_action_range_is_named() -> None:
    s = untrained_pendulum(0.05)
    curve(lambda i: min(0.9, 0.1 + 0.03 * i), "rollout/action_clip_fraction", s)
    diagnosis = diagnose(s, PENDULUM)
    assert [c.cause for c in diagnosis.causes] == ["action_saturation"]
    assert "the first rollouts clipped 0.15" in diagnosis.causes[0].evidence[0]["note"]


def first(series: Series, updates: int) -> Series:
    return {name: points[:updates] for name, points in series.items()}


def test_a_run_of_four_updates_is_not_judged_and_says_why() -> None:
    s = healthy()
    curve(lambda i: 1e-6, "train/approx_kl_post", s)  # would be step_too_small on 40 updates
    curve(lambda i: 0.0, "train/clip_fraction", s)
    flat_return(s, 20.0, 2.0)
    assert [c.cause for c in diagnose(s, CARTPOLE).causes] == ["step_too_small"]
    diagnosis = diagnose(first(s, 4), CARTPOLE)
    assert diagnosis.causes == []
    reason = "the run logged 4 update(s); a cause is judged on 5 at least"
    assert diagnosis.thin_evidence is not None and diagnosis.thin_evidence.startswith(reason)
    assert diagnosis.lines() == [f"not judged: {diagnosis.thin_evidence}"]
    assert diagnosis.to_dict()["thin_evidence"] == diagnosis.thin_evidence
    judged = {n.cause for n in diagnosis.not_judged}
    assert {"step_too_small", "step_too_large", "critic_not_learning"} <= judged


def test_a_run_of_five_updates_is_judged() -> None:
    diagnosis = diagnose(first(healthy(), 5), CARTPOLE)
    assert diagnosis.thin_evidence is None and "thin_evidence" not in diagnosis.to_dict()


def test_non_finite_observations_are_named_on_a_run_too_short_for_trends() -> None:
    s = first(healthy(), 2)
    s["rollout/obs_nonfinite"] = [(STEP, 0.0), (2 * STEP, 12.0)]
    diagnosis = diagnose(s, CARTPOLE)
    assert [c.cause for c in diagnosis.causes] == ["observations_not_finite"]
    assert diagnosis.causes[0].first_step == 2 * STEP
    assert diagnosis.thin_evidence is not None  # the trends were not judged
    assert diagnosis.lines()[0].startswith("1. observations_not_finite (90%)")


def test_training_that_turned_nan_on_finite_inputs_is_a_step_too_large_even_when_short() -> None:
    message = "non-finite values after update 5: train/policy_gradient_loss=nan"
    failure = Failure(message, "NonFiniteError", "trainer", step=1280, kind="non_finite_update")
    facts = replace(PENDULUM, learning_rate=3.0, failure=failure)
    diagnosis = diagnose(first(healthy(continuous=True), 4), facts)
    (top,) = diagnosis.causes
    assert (top.cause, top.confidence, top.first_step) == ("step_too_large", 0.8, 1280)
    assert top.patch == {"update.learning_rate.start": 0.3}
    assert top.evidence[0]["value"] == message
    assert "step_too_large" not in {n.cause for n in diagnosis.not_judged}
    assert diagnosis.thin_evidence is not None  # the trends were still not judged


def test_training_that_turned_nan_on_huge_rewards_is_not_blamed_on_the_learning_rate() -> None:
    failure = Failure(
        "non-finite values", "NonFiniteError", "trainer", 1280, None, "non_finite_update"
    )
    s = first(healthy(continuous=True), 4)
    s["rollout/reward_abs_max"] = [(STEP, 1.0), (2 * STEP, 1.0e6)]
    diagnosis = diagnose(s, replace(PENDULUM, failure=failure))
    assert diagnosis.causes == []
