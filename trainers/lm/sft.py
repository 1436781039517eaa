"""Supervised fine-tuning on (prompt, answer) pairs: the loss only on the answer and its EOS.

The demo's starting point; PPO then fine-tunes from here, with this model as its reference.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import torch

from .errors import LMTrainerError
from .policy import position_ids


def sft_batch(tokenizer: Any, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
    """Right-padded prompt + answer + EOS, labels -100 outside the answer and its EOS."""
    rows, labels = [], []
    for prompt, answer in pairs:
        prompt_ids = tokenizer(prompt)["input_ids"]
        answer_ids = [*tokenizer(answer)["input_ids"], tokenizer.eos_token_id]
        rows.append(prompt_ids + answer_ids)
        labels.append([-100] * len(prompt_ids) + answer_ids)
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    target = torch.tensor([lab + [-100] * (width - len(lab)) for lab in labels])
    return {"input_ids": ids, "attention_mask": mask, "labels": target}


def supervised_fine_tune(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    *,
    steps: int,
    batch_size: int = 64,
    learning_rate: float = 3e-3,
    seed: int = 0,
    on_step: Callable[[int, float], None] | None = None,
) -> float:
    """`steps` AdamW steps on random minibatches of `pairs`; returns the last loss."""
    if not pairs or steps < 1:
        raise LMTrainerError("supervised_fine_tune needs at least one pair and one step")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0 - s / steps)
    model.train()
    loss_value = float("nan")
    for step in range(1, steps + 1):
        batch = sft_batch(tokenizer, rng.sample(list(pairs), min(batch_size, len(pairs))))
        out = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            position_ids=position_ids(batch["attention_mask"]),
            labels=batch["labels"],
        )
        optimizer.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        loss_value = float(out.loss.detach())
        if on_step is not None:
            on_step(step, loss_value)
    model.eval()
    return loss_value
