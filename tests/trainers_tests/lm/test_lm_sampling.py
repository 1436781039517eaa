"""Sampling: exact ids, behavior log-probs kept apart from the recomputed old ones, masks."""

from __future__ import annotations

import math

import pytest
import torch

from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.sampling import SamplingSettings, process_logits


def test_behavior_and_recomputed_log_probs_agree_without_processors(make_trainer, prompts):
    trainer = make_trainer()
    batch = trainer.collect(prompts)
    assert batch.extra["lm/sampling_processed"] == 0.0
    assert batch.extra["lm/behavior_gap_max"] < 1e-4
    mask = batch.action_mask
    torch.testing.assert_close(
        batch.behavior_log_probs[mask], batch.old_log_probs[mask], atol=1e-4, rtol=0
    )


def test_temperature_makes_behavior_differ_and_is_flagged_not_substituted(make_trainer, prompts):
    trainer = make_trainer(sampling=SamplingSettings(max_new_tokens=6, temperature=0.5))
    batch = trainer.collect(prompts)
    assert batch.extra["lm/sampling_processed"] == 1.0
    assert batch.extra["lm/behavior_gap_mean"] > 1e-2
    mask = batch.action_mask
    assert not torch.allclose(batch.behavior_log_probs[mask], batch.old_log_probs[mask])
    # The ratio's denominator is the old-training policy: recomputed at temperature 1.
    terms = trainer.policy(batch.input_ids, batch.attention_mask)
    torch.testing.assert_close(terms.log_probs[mask], batch.old_log_probs[mask])


def test_masks_mark_the_response_and_its_last_token(make_trainer, prompts):
    trainer = make_trainer(sampling=SamplingSettings(max_new_tokens=6))
    batch = trainer.collect(prompts)
    eos = trainer.tokenizer.eos_token_id
    prompt_columns = batch.input_ids.shape[1] - 6
    assert not batch.action_mask[:, :prompt_columns].any()
    assert torch.equal(batch.terminal_mask.sum(1), torch.ones(batch.size, dtype=torch.long))
    for row in range(batch.size):
        actions = batch.action_mask[row].nonzero().squeeze(1)
        assert int(actions.max()) == int(batch.terminal_mask[row].nonzero())
        assert torch.equal(actions, torch.arange(prompt_columns, prompt_columns + len(actions)))
        taken = batch.input_ids[row, actions]
        # EOS ends a response; nothing after it is an action.
        assert (taken[:-1] != eos).all()
        assert taken[-1] == eos or len(actions) == 6
        assert batch.attention_mask[row, actions].all()


def test_sampling_is_reproducible_from_the_seed(make_trainer, prompts):
    first = make_trainer(seed=5).collect(prompts)
    second = make_trainer(seed=5).collect(prompts)
    assert torch.equal(first.input_ids, second.input_ids)
    assert first.responses == second.responses


def test_top_p_keeps_the_smallest_set_reaching_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = process_logits(logits, SamplingSettings(top_p=0.8)).isfinite()
    assert kept.tolist() == [[True, True, False, False]]
    kept = process_logits(logits, SamplingSettings(top_p=0.1)).isfinite()
    assert kept.tolist() == [[True, False, False, False]]


def test_top_p_behavior_log_probs_are_renormalised_over_the_nucleus(make_trainer, prompts):
    trainer = make_trainer(sampling=SamplingSettings(max_new_tokens=4, top_p=0.5))
    batch = trainer.collect(prompts)
    mask = batch.action_mask
    assert bool((batch.behavior_log_probs[mask] >= batch.old_log_probs[mask] - 1e-5).all())
    assert batch.extra["lm/sampling_processed"] == 1.0


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_new_tokens", 0), ("temperature", 0.0), ("temperature", math.inf), ("top_p", 1.5)],
)
def test_bad_sampling_settings_are_refused_naming_the_field(field, value):
    with pytest.raises(LMTrainerError, match=field):
        SamplingSettings(**{field: value})


def test_prompts_longer_than_the_model_positions_are_refused(make_trainer, prompts):
    trainer = make_trainer(
        reward=build_reward("length_penalty"), sampling=SamplingSettings(max_new_tokens=13)
    )
    with pytest.raises(LMTrainerError, match="positions"):
        trainer.learn(prompts, n_updates=1)


def test_a_linear_learning_rate_decays_over_the_planned_updates(make_trainer, prompts):
    trainer = make_trainer(learning_rate=1e-3, learning_rate_end=0.0)
    seen = []
    trainer.add_update_listener(lambda t, m: seen.append(m["train/learning_rate"]))
    trainer.learn(prompts, n_updates=4)
    assert seen == pytest.approx([1e-3, 0.75e-3, 0.5e-3, 0.25e-3])
