"""LoRA on the policy (peft): the adapter trains, the reference is the base with the adapter
off (no copy), the saved model is the adapter plus a note of its base."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from ppo_platform.trainers.lm.errors import LMTrainerError
from ppo_platform.trainers.lm.lora import (
    BASE_NOTE,
    AdapterOffReference,
    LoRASettings,
    trainable_parameters,
)
from ppo_platform.trainers.lm.policy import PolicyWithValueHead, load_causal_lm, reference_log_probs
from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.rollout import RolloutSettings
from ppo_platform.trainers.lm.update import UpdateSettings

LORA = LoRASettings(rank=4, alpha=8, target_modules=("c_attn",))


def lora_trainer(make_trainer, **kwargs):
    kwargs.setdefault("reward", build_reward("contains", {"text": "1"}))
    return make_trainer(
        lora=LORA,
        rollout=RolloutSettings(estimator="grpo", group_size=4),
        update=UpdateSettings(epochs=2, minibatch_size=8),
        learning_rate=5e-2,
        **kwargs,
    )


def test_only_the_adapter_trains(make_trainer):
    full = make_trainer(rollout=RolloutSettings(estimator="grpo", group_size=4))
    trainer = lora_trainer(make_trainer)
    adapter = trainable_parameters(trainer.policy)
    # c_attn of GPT-2 (32 -> 96) with rank 4: A is 4 x 32, B is 96 x 4, in the one layer.
    assert adapter == 4 * 32 + 96 * 4
    assert adapter < trainable_parameters(full.policy) / 20
    names = [n for n, p in trainer.policy.named_parameters() if p.requires_grad]
    assert names and all("lora_" in n for n in names)
    optimized = [p for group in trainer.optimizer.param_groups for p in group["params"]]
    assert sum(p.numel() for p in optimized) == adapter


def test_the_reference_is_the_base_with_the_adapter_off_not_a_copy(make_trainer, prompts):
    trainer = lora_trainer(make_trainer)
    assert isinstance(trainer.reference, AdapterOffReference)
    policy_storage = {p.data_ptr() for p in trainer.policy.lm.parameters()}
    assert all(p.data_ptr() in policy_storage for p in trainer.reference.parameters())
    for _ in range(3):
        trainer.step(prompts[:4])
    batch = trainer.last_batch
    assert batch is not None
    ids, attention, mask = batch.input_ids, batch.attention_mask, batch.action_mask
    base = load_causal_lm(trainer.policy_path).eval()
    expected = reference_log_probs(base, ids, attention)
    torch.testing.assert_close(reference_log_probs(trainer.reference, ids, attention), expected)
    with torch.no_grad():
        now = trainer.policy(ids, attention).log_probs
    assert float((now - expected)[mask].abs().max()) > 1e-3  # the adapter has moved the policy


def test_the_saved_model_is_the_adapter_and_a_note_of_its_base(make_trainer, prompts, tmp_path):
    from peft import PeftModel

    trainer = lora_trainer(make_trainer)
    trainer.step(prompts[:4])
    trainer.save(tmp_path)
    assert (tmp_path / "adapter_model.safetensors").is_file()
    assert not (tmp_path / "model.safetensors").exists()  # no full copy of the weights
    note = json.loads((tmp_path / BASE_NOTE).read_text())
    assert note["base_model"] == str(trainer.policy_path)
    loaded = PeftModel.from_pretrained(load_causal_lm(note["base_model"]), tmp_path).eval()
    batch = trainer.last_batch
    assert batch is not None
    with torch.no_grad():
        again = PolicyWithValueHead(loaded, value_head=False)(batch.input_ids, batch.attention_mask)
        now = trainer.policy(batch.input_ids, batch.attention_mask)
    torch.testing.assert_close(again.log_probs, now.log_probs)


def test_a_target_module_the_model_lacks_is_refused_with_its_modules(make_trainer):
    with pytest.raises(LMTrainerError, match=r"\['q_proj'\] are not modules") as raised:
        make_trainer(lora=LoRASettings(target_modules=("c_attn", "q_proj")))
    assert "c_attn" in str(raised.value) and "c_fc" in str(raised.value)


def test_wrapping_gpt2_says_nothing_and_states_its_in_by_out_weights(make_trainer):
    """GPT-2's Conv1D stores (in, out): fan_in_fan_out is set, not corrected by peft with a
    warning, and no library warning reaches a --quiet run."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = lora_trainer(make_trainer)
    assert [str(w.message) for w in caught] == []
    assert trainer.policy.lm.peft_config["default"].fan_in_fan_out is True
