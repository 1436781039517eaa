"""The PPO objective's contract (docs/guides/language-models.md, "Tested contract"): its six
points, its worked example, and the errors."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest
import torch
from torch.distributions import Categorical

from ppo_platform.trainers.losses import (
    BETA_MAX,
    BETA_MIN,
    AdaptiveKLController,
    LossError,
    PolicyLossOutput,
    clipped_policy_loss,
    explained_variance,
    kl_penalty_policy_loss,
    ratio_quantiles,
)

EPS = 0.2
NAN = float("nan")


def clip_loss(*args: torch.Tensor | None, **kwargs: object) -> PolicyLossOutput:
    return clipped_policy_loss(*args, clip_epsilon=EPS, **kwargs)  # type: ignore[arg-type]


def kl_loss(*args: torch.Tensor | None, **kwargs: object) -> PolicyLossOutput:
    return kl_penalty_policy_loss(*args, beta=0.5, **kwargs)  # type: ignore[arg-type]


LOSSES: list[Callable[..., PolicyLossOutput]] = [clip_loss, kl_loss]


def ragged_batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(new_logp, old_logp, advantages, mask) of shape (4, 5) with sequence lengths 5, 3, 1, 4."""
    gen = torch.Generator().manual_seed(seed)
    old = -torch.rand(4, 5, generator=gen) * 2
    new = old + torch.randn(4, 5, generator=gen) * 0.4
    adv = torch.randn(4, 5, generator=gen)
    mask = torch.arange(5) < torch.tensor([[5], [3], [1], [4]])
    return new, old, adv, mask


def seed_example() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    old = torch.tensor([[0.0, 0.0, NAN]])
    new = torch.tensor([[1.5, 0.5, NAN]]).log()
    adv = torch.tensor([[1.0, -1.0, NAN]])
    return new, old, adv, torch.tensor([[True, True, False]])


# --- contract point 1 --------------------------------------------------------------------


def test_equal_logps_give_unit_ratios_zero_clip_fraction_and_zero_kl() -> None:
    _, old, adv, mask = ragged_batch()
    out = clip_loss(old.clone(), old, adv, mask)
    torch.testing.assert_close(out.ratio, torch.ones(int(mask.sum())))
    assert out.clip_fraction.item() == 0.0
    assert out.approx_kl.item() == 0.0
    torch.testing.assert_close(out.loss, -adv[mask].mean())


# --- contract point 2 --------------------------------------------------------------------


@pytest.mark.parametrize(("advantage", "direction"), [(1.0, 1.0), (-1.0, -1.0)])
@pytest.mark.parametrize("loss_fn", LOSSES)
def test_gradient_step_moves_action_probability_with_advantage_sign(
    loss_fn: Callable[..., PolicyLossOutput], advantage: float, direction: float
) -> None:
    logits = torch.tensor([0.3, -0.2, 0.1], requires_grad=True)
    action = torch.tensor([1])
    old_logp = Categorical(logits=logits).log_prob(action).detach()
    prob_before = old_logp.exp().item()

    new_logp = Categorical(logits=logits).log_prob(action)
    loss_fn(new_logp, old_logp, torch.tensor([advantage])).loss.backward()
    with torch.no_grad():
        logits -= 0.1 * logits.grad  # type: ignore[operator]
    prob_after = Categorical(logits=logits).log_prob(action).exp().item()

    assert (prob_after - prob_before) * direction > 1e-3


# --- contract point 3 --------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
@pytest.mark.parametrize("loss_fn", LOSSES)
def test_padding_logps_change_neither_loss_nor_gradients_even_when_nan(
    loss_fn: Callable[..., PolicyLossOutput], reduction: str
) -> None:
    new, old, adv, mask = ragged_batch()
    results = []
    for padding in (0.0, 5.0, NAN):
        new_p = torch.where(mask, new, padding).requires_grad_(True)
        old_p = torch.where(mask, old, padding)
        adv_p = torch.where(mask, adv, padding)
        out = loss_fn(new_p, old_p, adv_p, mask, reduction=reduction)
        out.loss.backward()
        assert new_p.grad is not None
        results.append((out.loss.detach(), out.approx_kl, out.clip_fraction, new_p.grad))

    for loss, kl, clip_fraction, grad in results[1:]:
        torch.testing.assert_close(loss, results[0][0])
        torch.testing.assert_close(kl, results[0][1])
        torch.testing.assert_close(clip_fraction, results[0][2])
        torch.testing.assert_close(grad, results[0][3])
    grad = results[-1][3]
    assert torch.isfinite(grad).all()
    assert (grad[~mask] == 0).all()
    assert (grad[mask] != 0).any()


# --- contract point 4 --------------------------------------------------------------------

RATIOS = [0.5, 0.9, 1.0, 1.1, 1.5]


@pytest.mark.parametrize("ratio", RATIOS)
@pytest.mark.parametrize("advantage", [2.0, -2.0])
def test_clipped_loss_is_the_exact_piecewise_surrogate(ratio: float, advantage: float) -> None:
    out = clip_loss(torch.tensor([math.log(ratio)]), torch.tensor([0.0]), torch.tensor([advantage]))
    if advantage >= 0:
        expected = advantage * min(ratio, 1 + EPS)
    else:
        expected = advantage * max(ratio, 1 - EPS)
    assert out.loss.item() == pytest.approx(-expected, rel=1e-6)


@pytest.mark.parametrize(
    ("ratio", "advantage", "saturated"),
    [
        (1.5, 2.0, True),  # A > 0, r > 1 + eps: no further gain
        (0.5, -2.0, True),  # A < 0, r < 1 - eps: no further gain
        (0.5, 2.0, False),  # A > 0, r < 1 - eps: still pushed up
        (1.5, -2.0, False),  # A < 0, r > 1 + eps: still pushed down
        (1.1, 2.0, False),
        (0.9, -2.0, False),
    ],
)
def test_gradient_vanishes_exactly_where_the_clip_saturates(
    ratio: float, advantage: float, saturated: bool
) -> None:
    new_logp = torch.tensor([math.log(ratio)], requires_grad=True)
    clip_loss(new_logp, torch.tensor([0.0]), torch.tensor([advantage])).loss.backward()
    assert new_logp.grad is not None
    # d(-r A)/d log r = -r A where the unclipped branch is active.
    expected = 0.0 if saturated else -ratio * advantage
    assert new_logp.grad.item() == pytest.approx(expected, rel=1e-6, abs=0.0)


# --- contract point 5 --------------------------------------------------------------------


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
@pytest.mark.parametrize("loss_fn", LOSSES)
def test_permuting_rows_keeps_the_full_batch_reduction(
    loss_fn: Callable[..., PolicyLossOutput], reduction: str
) -> None:
    new, old, adv, mask = ragged_batch()
    perm = torch.tensor([2, 0, 3, 1])
    out = loss_fn(new, old, adv, mask, reduction=reduction)
    permuted = loss_fn(new[perm], old[perm], adv[perm], mask[perm], reduction=reduction)
    torch.testing.assert_close(permuted.loss, out.loss)
    torch.testing.assert_close(permuted.approx_kl, out.approx_kl)
    torch.testing.assert_close(permuted.clip_fraction, out.clip_fraction)


# --- contract point 6 --------------------------------------------------------------------


def k3(ratio: float) -> float:
    return (ratio - 1) - math.log(ratio)


def test_kl_and_clip_fraction_are_reported_per_slice() -> None:
    slices = {"math": [1.5, 1.0], "code": [0.5, 0.9, 1.3]}
    adv = {"math": [1.0, 1.0], "code": [1.0, -1.0, 1.0]}
    reports = {
        task: clip_loss(torch.tensor(r).log(), torch.zeros(len(r)), torch.tensor(adv[task]))
        for task, r in slices.items()
    }
    assert reports["math"].clip_fraction.item() == pytest.approx(1 / 2)
    assert reports["code"].clip_fraction.item() == pytest.approx(2 / 3)
    assert reports["math"].approx_kl.item() == pytest.approx((k3(1.5) + 0.0) / 2, rel=1e-6)
    assert reports["code"].approx_kl.item() == pytest.approx(
        (k3(0.5) + k3(0.9) + k3(1.3)) / 3, rel=1e-6
    )
    # The pooled batch weights tokens, so it is not the mean of the slice means.
    pooled = clip_loss(
        torch.tensor(slices["math"] + slices["code"]).log(),
        torch.zeros(5),
        torch.tensor(adv["math"] + adv["code"]),
    )
    assert pooled.clip_fraction.item() == pytest.approx(3 / 5)
    assert pooled.approx_kl.item() == pytest.approx(
        (k3(1.5) + k3(0.5) + k3(0.9) + k3(1.3)) / 5, rel=1e-6
    )


# --- the contract's worked example----------------------------------------------------------


def test_seed_worked_example_values() -> None:
    out = clip_loss(*seed_example())
    torch.testing.assert_close(out.loss, torch.tensor(-0.2))
    torch.testing.assert_close(out.clip_fraction, torch.tensor(1.0))
    torch.testing.assert_close(out.approx_kl, torch.tensor((k3(1.5) + k3(0.5)) / 2))
    assert out.approx_kl.item() == pytest.approx(0.1438410362, rel=1e-6)
    torch.testing.assert_close(out.ratio, torch.tensor([1.5, 0.5]))


def test_diagnostics_are_detached_and_loss_carries_gradient() -> None:
    new, old, adv, mask = seed_example()
    out = clip_loss(new.requires_grad_(True), old, adv, mask)
    assert out.loss.requires_grad
    assert not out.approx_kl.requires_grad
    assert not out.clip_fraction.requires_grad
    assert not out.ratio.requires_grad
    assert out.ratio.shape == (2,)


def clipped_branch_only(ratio: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
    """The common wrong surrogate: clamp(r) * A, the unclipped branch dropped."""
    return -(ratio.clamp(1 - EPS, 1 + EPS) * adv).mean()


def test_clipped_branch_only_agrees_on_the_seed_example_where_both_tokens_saturate() -> None:
    new, old, adv, mask = seed_example()
    wrong = clipped_branch_only((new - old)[mask].exp(), adv[mask])
    torch.testing.assert_close(clip_loss(new, old, adv, mask).loss, wrong)


def test_clipped_branch_only_differs_once_the_advantage_signs_flip() -> None:
    new, old, _, mask = seed_example()
    adv = torch.tensor([[-1.0, 1.0, NAN]])  # r=1.5 with A<0, r=0.5 with A>0: never saturated
    ours = clip_loss(new, old, adv, mask).loss
    wrong = clipped_branch_only((new - old)[mask].exp(), adv[mask])
    assert ours.item() == pytest.approx(-(-1.5 + 0.5) / 2)
    assert wrong.item() == pytest.approx(-(-1.2 + 0.8) / 2)


# --- reductions --------------------------------------------------------------------------


def test_token_mean_and_sequence_mean_differ_on_ragged_masks() -> None:
    adv = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
    mask = torch.tensor([[True, True, True], [True, False, False]])
    old = torch.zeros(2, 3)  # r = 1, so each token's loss is -A
    token = clip_loss(old.clone(), old, adv, mask, reduction="token_mean")
    sequence = clip_loss(old.clone(), old, adv, mask, reduction="sequence_mean")
    assert token.loss.item() == pytest.approx(-(1 + 2 + 3 + 4) / 4)
    assert sequence.loss.item() == pytest.approx(-((1 + 2 + 3) / 3 + 4) / 2)


def test_sequence_mean_skips_rows_without_valid_tokens() -> None:
    adv = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0], [100.0, 100.0, 100.0]])
    mask = torch.tensor([[True, True, True], [True, False, False], [False, False, False]])
    old = torch.zeros(3, 3)
    out = clip_loss(old.clone(), old, adv, mask, reduction="sequence_mean")
    assert out.loss.item() == pytest.approx(-(2 + 4) / 2)


def test_sequence_mean_without_mask_averages_row_means() -> None:
    adv = torch.tensor([[1.0, 3.0], [10.0, 20.0]])
    old = torch.zeros(2, 2)
    out = clip_loss(old.clone(), old, adv, reduction="sequence_mean")
    assert out.loss.item() == pytest.approx(-(2 + 15) / 2)


def test_float_mask_of_zeros_and_ones_matches_bool_mask() -> None:
    new, old, adv, mask = ragged_batch()
    as_bool = clip_loss(new, old, adv, mask, reduction="sequence_mean")
    as_float = clip_loss(new, old, adv, mask.float(), reduction="sequence_mean")
    torch.testing.assert_close(as_float.loss, as_bool.loss)
    torch.testing.assert_close(as_float.ratio, as_bool.ratio)


def test_skipping_validation_gives_the_same_result_on_good_input() -> None:
    new, old, adv, mask = ragged_batch()
    checked = clip_loss(new, old, adv, mask)
    unchecked = clip_loss(new, old, adv, mask, validate=False)
    torch.testing.assert_close(unchecked.loss, checked.loss)
    torch.testing.assert_close(unchecked.approx_kl, checked.approx_kl)


def test_skipping_validation_still_ignores_nan_padding() -> None:
    new, old, adv, mask = seed_example()
    out = clip_loss(new.requires_grad_(True), old, adv, mask, validate=False)
    out.loss.backward()
    torch.testing.assert_close(out.loss, torch.tensor(-0.2))
    assert new.grad is not None
    assert torch.isfinite(new.grad).all()


def test_old_logp_receives_no_gradient() -> None:
    new, old, adv, mask = ragged_batch()
    old.requires_grad_(True)
    adv.requires_grad_(True)
    out = clip_loss(new.requires_grad_(True), old, adv, mask)
    out.loss.backward()
    assert old.grad is None
    assert adv.grad is None
    assert new.grad is not None


# --- errors ------------------------------------------------------------------------------


def test_shape_mismatch_is_rejected_naming_the_argument_and_shapes() -> None:
    with pytest.raises(LossError, match=r"old_logp has shape \(2, 4\) but new_logp has shape"):
        clip_loss(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2, 3))


def test_mask_shape_mismatch_is_rejected() -> None:
    with pytest.raises(LossError, match=r"mask has shape \(3,\)"):
        clip_loss(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 3), torch.ones(3).bool())


@pytest.mark.parametrize("epsilon", [0.0, 1.0, 1.5, -0.1, NAN])
def test_clip_epsilon_outside_the_open_unit_interval_is_rejected(epsilon: float) -> None:
    x = torch.zeros(3)
    with pytest.raises(LossError, match=r"clip_epsilon must be a number in \(0, 1\), got"):
        clipped_policy_loss(x, x, x, clip_epsilon=epsilon)


def test_empty_mask_is_rejected() -> None:
    new, old, adv, mask = seed_example()
    with pytest.raises(LossError, match="mask selects no entries"):
        clip_loss(new, old, adv, torch.zeros_like(mask))


def test_mask_with_values_other_than_zero_and_one_is_rejected() -> None:
    x = torch.zeros(3)
    with pytest.raises(LossError, match=r"mask has 1 value\(s\) other than 0/1"):
        clip_loss(x, x, x, torch.tensor([1.0, 0.5, 0.0]))


@pytest.mark.parametrize("position", [0, 1, 2])
@pytest.mark.parametrize("bad", [NAN, float("inf"), -float("inf")])
def test_non_finite_selected_term_is_rejected_naming_the_argument(
    position: int, bad: float
) -> None:
    names = ["new_logp", "old_logp", "advantages"]
    terms = [torch.zeros(2, 3) for _ in names]
    terms[position][1, 0] = bad
    with pytest.raises(LossError, match=rf"{names[position]} has 1 non-finite .*\(1, 0\)"):
        clip_loss(*terms, torch.ones(2, 3, dtype=torch.bool))


def test_sequence_mean_rejects_1d_inputs() -> None:
    x = torch.zeros(4)
    with pytest.raises(LossError, match=r"sequence_mean.*2-D"):
        clip_loss(x, x, x, reduction="sequence_mean")


def test_unknown_reduction_is_rejected() -> None:
    x = torch.zeros(4)
    with pytest.raises(LossError, match="reduction must be one of"):
        clip_loss(x, x, x, reduction="sum")


# --- KL penalty --------------------------------------------------------------------------


def test_kl_penalty_loss_value_and_gradient_match_hand_computation() -> None:
    beta, ratios, advs = 0.5, [1.5, 0.5], [1.0, -1.0]
    new_logp = torch.tensor(ratios).log().requires_grad_(True)
    out = kl_penalty_policy_loss(new_logp, torch.zeros(2), torch.tensor(advs), beta=beta)
    out.loss.backward()

    expected = -sum(r * a - beta * k3(r) for r, a in zip(ratios, advs, strict=True)) / 2
    assert out.loss.item() == pytest.approx(expected, rel=1e-6)
    # d/d log r of -(r A - beta ((r - 1) - log r)) = -(r A - beta (r - 1)), halved by the mean.
    expected_grad = [-(r * a - beta * (r - 1)) / 2 for r, a in zip(ratios, advs, strict=True)]
    torch.testing.assert_close(new_logp.grad, torch.tensor(expected_grad))
    assert out.approx_kl.item() == pytest.approx((k3(1.5) + k3(0.5)) / 2, rel=1e-6)
    torch.testing.assert_close(out.ratio, torch.tensor(ratios))


def test_kl_penalty_clip_fraction_is_a_diagnostic_only() -> None:
    new, old, adv, mask = seed_example()
    default = kl_penalty_policy_loss(new, old, adv, mask, beta=0.5)
    wide = kl_penalty_policy_loss(new, old, adv, mask, beta=0.5, clip_epsilon=0.6)
    assert default.clip_fraction.item() == 1.0
    assert wide.clip_fraction.item() == 0.0
    torch.testing.assert_close(wide.loss, default.loss)


@pytest.mark.parametrize("beta", [-0.1, NAN, float("inf")])
def test_kl_penalty_rejects_bad_beta(beta: float) -> None:
    x = torch.zeros(3)
    with pytest.raises(LossError, match="beta must be a finite number >= 0"):
        kl_penalty_policy_loss(x, x, x, beta=beta)


# --- adaptive KL controller --------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "observed_kl", "expected_beta"),
    [
        ("lesson", 2.01, 2.0),  # above 2 x target: double
        ("lesson", 2.0, 1.0),  # on the upper threshold: unchanged
        ("lesson", 1.8, 1.0),  # inside the band
        ("lesson", 0.5, 1.0),  # on the lower threshold: unchanged
        ("lesson", 0.49, 0.5),  # below target / 2: halve
        ("paper", 1.8, 2.0),  # above 1.5 x target: double (the lesson rule would not)
        ("paper", 1.5, 1.0),  # on the upper threshold: unchanged
        ("paper", 0.7, 1.0),  # inside the band
        ("paper", 0.6, 0.5),  # below target / 1.5: halve (the lesson rule would not)
    ],
)
def test_adaptive_kl_controller_rules(rule: str, observed_kl: float, expected_beta: float) -> None:
    controller = AdaptiveKLController(beta_init=1.0, target=1.0, rule=rule)  # type: ignore[arg-type]
    assert controller.update(observed_kl) == expected_beta
    assert controller.beta == expected_beta


def test_paper_rule_lower_threshold_is_target_over_one_and_a_half() -> None:
    controller = AdaptiveKLController(beta_init=1.0, target=1.5, rule="paper")
    assert controller.update(1.0) == 1.0  # exactly 1.5 / 1.5
    assert controller.update(0.999) == 0.5


def test_adaptive_kl_controller_compounds_over_updates() -> None:
    controller = AdaptiveKLController(beta_init=1.0, target=0.01)
    betas = [controller.update(kl) for kl in (0.05, 0.05, 0.001, 0.01)]
    assert betas == [2.0, 4.0, 2.0, 2.0]


def test_adaptive_kl_controller_clamps_beta() -> None:
    low = AdaptiveKLController(beta_init=BETA_MIN, target=0.01)
    high = AdaptiveKLController(beta_init=BETA_MAX, target=0.01)
    assert low.update(0.0) == BETA_MIN
    assert high.update(1.0) == BETA_MAX


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"beta_init": 0.0, "target": 0.01}, "beta_init must be a finite number > 0"),
        ({"beta_init": NAN, "target": 0.01}, "beta_init must be a finite number > 0"),
        ({"beta_init": 1e9, "target": 0.01}, r"beta_init must be in \["),
        ({"beta_init": 1.0, "target": -0.01}, "target must be a finite number > 0"),
        ({"beta_init": 1.0, "target": float("inf")}, "target must be a finite number > 0"),
        ({"beta_init": 1.0, "target": 0.01, "rule": "trpo"}, "rule must be 'lesson' or 'paper'"),
    ],
)
def test_adaptive_kl_controller_rejects_bad_arguments(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(LossError, match=message):
        AdaptiveKLController(**kwargs)  # type: ignore[arg-type]


def test_adaptive_kl_controller_rejects_non_finite_kl() -> None:
    controller = AdaptiveKLController(beta_init=1.0, target=0.01)
    with pytest.raises(LossError, match="observed_kl must be finite"):
        controller.update(NAN)
    assert controller.beta == 1.0


# --- ratio quantiles and explained variance ----------------------------------------------


def test_ratio_quantiles_values() -> None:
    quantiles = ratio_quantiles(torch.arange(101.0) / 50)  # 0.00, 0.02, ..., 2.00
    assert list(quantiles) == ["min", "p01", "p50", "p99", "max"]
    assert all(q.dim() == 0 for q in quantiles.values())
    expected = {"min": 0.0, "p01": 0.02, "p50": 1.0, "p99": 1.98, "max": 2.0}
    for name, value in expected.items():
        assert quantiles[name].item() == pytest.approx(value, abs=1e-6)


def test_ratio_quantiles_of_a_loss_output() -> None:
    quantiles = ratio_quantiles(clip_loss(*seed_example()).ratio)
    assert quantiles["min"].item() == pytest.approx(0.5)
    assert quantiles["p50"].item() == pytest.approx(1.0)
    assert quantiles["max"].item() == pytest.approx(1.5)


def test_ratio_quantiles_rejects_empty_input() -> None:
    with pytest.raises(LossError, match="ratio is empty"):
        ratio_quantiles(torch.empty(0))


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([1.0, 2.0, 3.0, 4.0], 1.0),  # perfect prediction
        ([2.5, 2.5, 2.5, 2.5], 0.0),  # predicting the mean explains nothing
        ([1.0, 2.0, 3.0, 3.0], 0.85),  # 1 - 0.1875 / 1.25
        ([4.0, 3.0, 2.0, 1.0], -3.0),  # 1 - 5 / 1.25: worse than the mean
    ],
)
def test_explained_variance_values(values: list[float], expected: float) -> None:
    ev = explained_variance(torch.tensor(values), torch.tensor([1.0, 2.0, 3.0, 4.0]))
    assert ev.dim() == 0
    assert ev.item() == pytest.approx(expected, abs=1e-6)


def test_explained_variance_is_nan_for_constant_returns() -> None:
    ev = explained_variance(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 3.0]))
    assert math.isnan(ev.item())


def test_explained_variance_rejects_mismatched_shapes() -> None:
    with pytest.raises(LossError, match=r"values \(3,\) and returns \(4,\)"):
        explained_variance(torch.zeros(3), torch.zeros(4))
