"""The named objectives' exact piecewise forms: PPO-Clip with asymmetric bounds (Clip-Higher),
GSPO's clipped sequence ratio and CISPO's clipped stop-gradient weight. For each: the loss
value, the gradient's sign, and the clipping on both sides of the range, for both reductions."""

from __future__ import annotations

import pytest
import torch

from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.objectives import ClipRange, policy_objective
from ppo_platform.trainers.lm.update import UpdateSettings

# Four responses of three action tokens (column 0 is the prompt); rows probe, in order:
# A > 0 above the range, A > 0 below it, A < 0 below it, A < 0 above it.
MASK = torch.tensor([[0, 1, 1, 1]] * 4, dtype=torch.bool)
ADVANTAGE = torch.tensor([1.0, 1.0, -1.0, -1.0])[:, None].expand(4, 4)
CLIP = ClipRange(low=0.2, high=0.28)


def loss_and_grad(objective, ratio, reduction="token_mean", clip=CLIP, mask=MASK):
    new = torch.zeros(4, 4, requires_grad=True)
    old = new.detach() - ratio.log()
    out = policy_objective(objective, new, old, ADVANTAGE.clone(), mask, clip, reduction)
    (grad,) = torch.autograd.grad(out.loss, new)
    return out, grad


def token_weight(reduction, mask=MASK):
    counts = mask.sum(1, keepdim=True).float()
    return 1 / mask.sum() if reduction == "token_mean" else 1 / (mask.shape[0] * counts)


RATIOS = torch.tensor([1.4, 0.6, 0.6, 1.4])[:, None].expand(4, 4)


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
def test_ppo_clip_saturates_on_the_favourable_side_only(reduction):
    out, grad = loss_and_grad("ppo", RATIOS, reduction)
    expected = torch.where(MASK, -ADVANTAGE * RATIOS * token_weight(reduction), 0.0)
    expected[[0, 2]] = 0.0  # r > 1 + high with A > 0, r < 1 - low with A < 0: flat
    torch.testing.assert_close(grad, expected)
    assert bool((grad[1][MASK[1]] < 0).all()) and bool((grad[3][MASK[3]] > 0).all())
    # Value: A >= 0 -> -A min(r, 1 + high); A < 0 -> -A max(r, 1 - low); all rows clipped.
    per_row = torch.tensor([-1.28, -0.6, 0.8, 1.4])
    torch.testing.assert_close(out.loss, per_row.mean())
    assert float(out.clip_fraction) == 1.0


def test_clip_higher_leaves_more_room_above_than_below():
    inside_high = torch.full((4, 4), 1.25)  # above 1 + low, below 1 + high
    out, grad = loss_and_grad("ppo", inside_high)
    assert float(out.clip_fraction) == 0.0 and bool((grad[0][MASK[0]] < 0).all())
    symmetric, grad_symmetric = loss_and_grad("ppo", inside_high, clip=ClipRange(0.2, 0.2))
    assert float(symmetric.clip_fraction) == 1.0 and bool((grad_symmetric[0] == 0).all())


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
def test_gspo_clips_whole_sequences_by_their_length_normalised_ratio(reduction):
    # Token ratios differ within a row; the sequence ratio is their geometric mean.
    high, low = [1.0, 1.2, 1.6, 1.46], [1.0, 0.5, 0.7, 0.6]
    tokens = torch.tensor([high, low, low, high])
    sequence = tokens[:, 1:].log().mean(1).exp()
    out, grad = loss_and_grad("gspo", tokens, reduction)
    assert (sequence > 1 + CLIP.high).tolist() == [True, False, False, True]
    assert (sequence < 1 - CLIP.low).tolist() == [False, True, True, False]
    length = MASK.sum(1, keepdim=True).float()
    # d l_i / d log pi(a_t) = -A_i s_i / |y_i|, times what the reduction gives token loss l_i
    # (every token carries l_i: |y_i| of them).
    unclipped = -ADVANTAGE * sequence[:, None] / length * length * token_weight(reduction)
    expected = torch.where(MASK, unclipped, 0.0)
    expected[[0, 2]] = 0.0  # row 0: A > 0, s > 1 + high; row 2 A < 0, s < 1 - low: flat
    torch.testing.assert_close(grad, expected)
    assert bool((grad[1][MASK[1]] < 0).all()) and bool((grad[3][MASK[3]] > 0).all())
    # Every token of a sequence gets the same gradient: one ratio per sequence.
    assert bool((grad[1, 1:] == grad[1, 1]).all())
    torch.testing.assert_close(out.ratio, sequence.repeat_interleave(3))
    per_row = torch.stack([-1.28 * torch.ones(()), -sequence[1], 0.8 * torch.ones(()), sequence[3]])
    torch.testing.assert_close(out.loss, per_row.mean())


@pytest.mark.parametrize("reduction", ["token_mean", "sequence_mean"])
def test_cispo_keeps_every_gradient_with_the_weight_clipped(reduction):
    out, grad = loss_and_grad("cispo", RATIOS, reduction)
    weight = RATIOS.clamp(1 - CLIP.low, 1 + CLIP.high)
    expected = torch.where(MASK, -ADVANTAGE * weight * token_weight(reduction), 0.0)
    torch.testing.assert_close(grad, expected)
    # A > 0 raises the probability and A < 0 lowers it on both sides of the range.
    assert bool((grad[:2][MASK[:2]] < 0).all()) and bool((grad[2:][MASK[2:]] > 0).all())
    torch.testing.assert_close(out.loss, torch.tensor([-1.28, -0.8, 0.8, 1.28]).mean())
    assert float(out.clip_fraction) == 1.0
    inside, inside_grad = loss_and_grad("cispo", torch.ones(4, 4), reduction)
    torch.testing.assert_close(
        inside_grad, torch.where(MASK, -ADVANTAGE * token_weight(reduction), 0.0)
    )
    assert float(inside.clip_fraction) == 0.0


@pytest.mark.parametrize("objective", ["ppo", "gspo", "cispo"])
def test_each_objective_is_the_plain_policy_gradient_at_ratio_one(objective):
    _, grad = loss_and_grad(objective, torch.ones(4, 4))
    torch.testing.assert_close(grad, torch.where(MASK, -ADVANTAGE / MASK.sum(), 0.0))


@pytest.mark.parametrize("objective", ["ppo", "gspo", "cispo"])
def test_padding_does_not_change_any_objective(objective):
    new = torch.randn(4, 4)
    old = new + 0.1 * torch.randn(4, 4)
    garbage_old = torch.where(MASK, old, float("nan"))
    adv = torch.where(MASK, ADVANTAGE, float("nan"))
    first = policy_objective(objective, new, old, ADVANTAGE.clone(), MASK, CLIP, "token_mean")
    second = policy_objective(objective, new, garbage_old, adv, MASK, CLIP, "token_mean")
    torch.testing.assert_close(first.loss, second.loss)


def test_bad_bounds_and_unknown_objectives_are_refused():
    with pytest.raises(LMTrainerError, match="below clip low"):
        ClipRange(low=0.2, high=0.1)
    with pytest.raises(LMTrainerError, match="clip high must be in"):
        ClipRange(low=0.2, high=1.0)
    with pytest.raises(LMTrainerError, match="objective must be one of"):
        UpdateSettings(objective="sapo")  # type: ignore[arg-type]
    assert UpdateSettings(clip_epsilon_high=0.28).clip == ClipRange(0.2, 0.28)
