"""A language-model run records what it resolved when it started, as a gymnasium run does
(training/resolved.py): device, dtype, torch threads, the policy's config, architecture and
parameter count, its tokenizer, the reference and the reward, and the library versions; as
MLflow tags, as resolved.json in the run folder, and on the console."""

from __future__ import annotations

import json
import os
from importlib import metadata
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from ppo_platform.cli import app

os.environ.setdefault("HF_HUB_OFFLINE", "1")

SPEC = """\
name: llama-resolved
algorithm: ppo_lm
lm:
  model: {policy: mine/llama, reference: mine/llama-ref}
  prompts: {path: mine/prompts.jsonl}
  rewards:
    - {name: exact_answer}
    - {name: length_penalty, weight: 0.5, params: {per_token: 0.1}}
  generation: {max_new_tokens: 2}
  reduction: sequence_mean
  prompts_per_update: 4
update: {epochs: 1, minibatch_size: 4}
budget: {updates: 2}
evaluation: {every_updates: 0}
"""


def _tiny_llama(folder: Path) -> int:
    """A one-layer Llama built from a config with a character tokenizer (nothing downloaded),
    saved twice (policy and reference); its number of parameters."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from ppo_platform.trainers.lm.tiny import save_model, train_char_tokenizer

    torch.manual_seed(0)
    tokenizer = train_char_tokenizer(["0123456789+="])
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=24,
        bos_token_id=tokenizer.eos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    save_model(model, tokenizer, folder / "llama")
    save_model(model, tokenizer, folder / "llama-ref")
    prompts = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(8)]
    (folder / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in prompts))
    return sum(p.numel() for p in model.parameters())


@pytest.mark.slow  # one real (two-update) LM run
def test_an_lm_run_records_what_it_resolved(platform_home: Path, tmp_path: Path) -> None:
    import torch

    from ppo_platform.trainers.lm.policy import load_tokenizer

    parameters = _tiny_llama(platform_home / "lm" / "mine")
    spec = tmp_path / "llama.yaml"
    spec.write_text(SPEC)
    result = CliRunner().invoke(app, ["run", str(spec)])
    assert result.exit_code == 0, result.output
    client = MlflowClient(f"sqlite:///{(platform_home / 'mlflow.db').resolve()}")
    [experiment] = [e for e in client.search_experiments() if e.name == "llama-resolved"]
    [run] = client.search_runs([experiment.experiment_id])
    tags = {
        k.removeprefix("ppo_platform.resolved."): v
        for k, v in run.data.tags.items()
        if k.startswith("ppo_platform.resolved.")
    }
    assert tags["device"] == "cpu" and tags["dtype"] == "float32"
    assert tags["torch_threads"] == str(torch.get_num_threads())
    assert tags["model.policy"] == "mine/llama"
    assert tags["model.config"].startswith("mine/llama/config.json (model_type llama, saved by")
    assert tags["model.architecture"] == "LlamaForCausalLM"
    assert tags["model.parameters"] == str(parameters)
    assert tags["model.value_head_parameters"] == "33"  # hidden 32 -> 1, with its bias
    assert tags["model.max_positions"] == "24"
    loaded = type(load_tokenizer(platform_home / "lm" / "mine" / "llama")).__name__
    assert tags["tokenizer"] == f"{loaded}, 15 tokens, pad '<pad>', EOS '<eos>'"
    assert tags["reference"] == f"mine/llama-ref (LlamaForCausalLM, {parameters} parameters)"
    assert tags["reward"] == '1 x exact_answer + 0.5 x length_penalty {"per_token": 0.1}'
    assert tags["version.torch"] == metadata.version("torch")
    assert tags["version.transformers"] == metadata.version("transformers")
    assert tags["version.tokenizers"] == metadata.version("tokenizers")
    assert not any(key.startswith("vectorization") for key in tags)  # no envs to vectorize
    saved = platform_home / "runs" / run.info.run_id / "resolved.json"
    assert json.loads(saved.read_text()) == tags
    [line] = [x for x in result.output.splitlines() if x.startswith("resolved: ")]
    assert line.startswith(
        f"resolved: model LlamaForCausalLM ({parameters} parameters, float32) from "
        "mine/llama/config.json"
    )
    assert f"reference {tags['reference']}; reward {tags['reward']}; device cpu" in line
    assert f"transformers {tags['version.transformers']}" in line
    # The console says it first: before any update's line.
    assert result.output.splitlines()[0] == line


def _tiny_neox_and_judge(folder: Path) -> None:
    """A GPT-NeoX policy and a one-label GPT-2 reward model, both from configs."""
    from transformers import (
        GPT2Config,
        GPT2ForSequenceClassification,
        GPTNeoXConfig,
        GPTNeoXForCausalLM,
    )

    from ppo_platform.trainers.lm.tiny import save_model, train_char_tokenizer

    tokenizer = train_char_tokenizer(["0123456789+="])
    ids = {"eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    neox = GPTNeoXConfig(
        vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, max_position_embeddings=20, bos_token_id=ids["eos_token_id"], **ids,
    )  # fmt: skip
    save_model(GPTNeoXForCausalLM(neox), tokenizer, folder / "neox")
    judge = GPT2Config(
        vocab_size=len(tokenizer), n_embd=8, n_layer=1, n_head=2, num_labels=1, **ids
    )
    save_model(GPT2ForSequenceClassification(judge), tokenizer, folder / "judge")
    (folder / "prompts.jsonl").write_text('{"prompt": "1+1="}\n')


@pytest.mark.slow  # loads two models (~10 s on a shared machine)
def test_an_lm_setup_names_its_reward_model_and_a_missing_reference(platform_home: Path) -> None:
    from ppo_platform.settings import get_settings
    from ppo_platform.spec.lm_loader import validate_lm_data
    from ppo_platform.training.lm_build import build_trainer
    from ppo_platform.training.progress import describe_resolved
    from ppo_platform.training.resolved import lm_resolved_setup

    _tiny_neox_and_judge(platform_home / "lm" / "own")
    spec = validate_lm_data(
        {
            "name": "neox-judged",
            "algorithm": "ppo_lm",
            "lm": {
                "model": {"policy": "own/neox", "reference": "none", "reward_model": "own/judge"},
                "prompts": {"path": "own/prompts.jsonl", "answer_field": None},
                "kl": {"beta": 0.0},
                "generation": {"max_new_tokens": 2},
                "reduction": "token_mean",
                "prompts_per_update": 2,
            },
            "update": {"minibatch_size": 2},
        }
    )
    trainer = build_trainer(spec, get_settings())
    resolved = lm_resolved_setup(spec, trainer)
    judge = sum(p.numel() for p in trainer.reward.model.parameters())
    assert resolved["model.architecture"] == "GPTNeoXForCausalLM"
    assert resolved["model.config"].startswith("own/neox/config.json (model_type gpt_neox,")
    assert resolved["model.value_head_parameters"] == "17"  # hidden 16 -> 1, with its bias
    assert resolved["model.max_positions"] == "20"
    assert resolved["reference"] == "none (no reference: no KL penalty)"
    assert resolved["reward"] == (
        f"reward model own/judge (GPT2ForSequenceClassification, {judge} parameters)"
    )
    line = describe_resolved(resolved)
    assert line.startswith("model GPTNeoXForCausalLM (") and "envs" not in line
    assert "reference none (no reference: no KL penalty); reward reward model own/judge" in line
