"""`ppo-platform lm init-demo`: a tiny GPT-2 that half knows how to add, ready for PPO.

Builds the model from a config and trains its character tokenizer locally (nothing is
downloaded), fine-tunes it briefly on "a+b=" -> "sum", and writes it with its training and
held-out prompts under the LM folder, where specs/lm_arithmetic.yaml finds them.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ppo_platform.errors import BadInputError, SpecIssue
from ppo_platform.settings import Settings, get_settings

DEMO_FOLDER = "arithmetic"
MAX_OPERAND = 49
HELD_OUT = 200
ALPHABET = "0123456789+="


@dataclass(frozen=True)
class DemoFiles:
    folder: Path
    model: Path
    train: Path
    heldout: Path
    sft_accuracy: float
    seconds: float


def addition_records(max_operand: int = MAX_OPERAND) -> list[dict[str, str]]:
    """Every 'a+b=' with its sum; task `carry` when the units digits carry, else `no_carry`."""
    records = []
    for a in range(max_operand + 1):
        for b in range(max_operand + 1):
            task = "carry" if a % 10 + b % 10 >= 10 else "no_carry"
            records.append({"prompt": f"{a}+{b}=", "answer": str(a + b), "task": task})
    return records


def split_records(seed: int = 0) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(train, held-out): a fixed shuffle, HELD_OUT prompts never trained on."""
    records = addition_records()
    random.Random(seed).shuffle(records)
    return records[HELD_OUT:], records[:HELD_OUT]


def write_jsonl(path: Path, records: list[dict[str, str]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def greedy_accuracy(model_dir: Path, records: list[dict[str, str]]) -> float:
    """Share of records whose greedy response equals the answer."""
    return heldout_accuracy(model_dir, records, greedy=True)


def heldout_accuracy(
    model_dir: Path, records: list[dict[str, str]], greedy: bool, samples: int = 1, seed: int = 0
) -> float:
    """Share of responses equal to the answer: greedy, or `samples` sampled ones per record at
    temperature 1 (the distribution PPO trains)."""
    from ppo_platform.trainers.lm.rewards import build_reward
    from ppo_platform.trainers.lm.rollout import PromptRecord
    from ppo_platform.trainers.lm.trainer import LMPPOTrainer

    trainer = LMPPOTrainer(model_dir, reward=build_reward("exact_answer"), seed=seed)
    prompts = [PromptRecord(r["prompt"], r["answer"], r["task"]) for r in records] * samples
    responses = trainer.respond(prompts, greedy=greedy)
    return sum(r == p.reference for r, p in zip(responses, prompts, strict=True)) / len(prompts)


def init_demo(
    settings: Settings | None = None,
    sft_steps: int = 150,
    seed: int = 0,
    force: bool = False,
    on_step: Callable[[int, float], None] | None = None,
) -> DemoFiles:
    """Write the demo model and prompts under the LM folder; refuse to overwrite unless force."""
    import torch

    from ppo_platform.trainers.lm.sft import supervised_fine_tune
    from ppo_platform.trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer

    settings = settings or get_settings()
    folder = settings.lm_folder / DEMO_FOLDER
    if folder.exists() and not force:
        issue = SpecIssue(
            "--force",
            f"the demo folder {folder} exists already.",
            False,
            fix="pass --force to rebuild it.",
        )
        raise BadInputError([issue], "--force")
    started = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    train, heldout = split_records()
    torch.manual_seed(seed)
    tokenizer = train_char_tokenizer([ALPHABET, *(r["prompt"] + r["answer"] for r in train)])
    model = build_tiny_gpt2(tokenizer, n_layer=2, n_embd=64, n_head=4, n_positions=16)
    pairs = [(r["prompt"], r["answer"]) for r in train]
    supervised_fine_tune(model, tokenizer, pairs, steps=sft_steps, seed=seed, on_step=on_step)
    model_dir = save_model(model, tokenizer, folder / "sft")
    files = DemoFiles(
        folder,
        model_dir,
        write_jsonl(folder / "train.jsonl", train),
        write_jsonl(folder / "heldout.jsonl", heldout),
        greedy_accuracy(model_dir, heldout),
        time.perf_counter() - started,
    )
    return files
