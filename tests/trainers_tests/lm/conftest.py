"""A tiny GPT-2 built from a config with a locally trained character tokenizer (nothing
downloaded), saved once per session, and a factory for trainers on it."""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ppo_platform.trainers.lm.rewards import build_reward
from ppo_platform.trainers.lm.rollout import PromptRecord
from ppo_platform.trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer
from ppo_platform.trainers.lm.trainer import LMPPOTrainer

# Nothing is downloaded: models are built from configs, tokenizers trained here.
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def addition_prompts(n: int, seed: int = 0) -> list[PromptRecord]:
    """'a+b=' prompts with the sum as reference; tasks split by whether the sum has 2 digits."""
    rng = random.Random(seed)
    records = []
    for _ in range(n):
        a, b = rng.randint(0, 9), rng.randint(0, 9)
        task = "carry" if a + b > 9 else "single"
        records.append(PromptRecord(f"{a}+{b}=", str(a + b), task))
    return records


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch

    torch.manual_seed(0)
    tokenizer = train_char_tokenizer(["0123456789+="])
    model = build_tiny_gpt2(tokenizer, n_layer=1, n_embd=32, n_head=2, n_positions=16)
    return save_model(model, tokenizer, tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture
def make_trainer(model_dir: Path) -> Callable[..., LMPPOTrainer]:
    def make(**kwargs: Any) -> LMPPOTrainer:
        kwargs.setdefault("reward", build_reward("exact_answer"))
        kwargs.setdefault("batch_size", 8)
        return LMPPOTrainer(model_dir, **kwargs)

    return make


@pytest.fixture
def prompts() -> list[PromptRecord]:
    return addition_prompts(8)
