"""Throughput of the language-model PPO trainer: tokens per second for generation and for the
update, and peak memory, on tiny GPT-2s built from configs (nothing downloaded).

    python benchmarks/lm_throughput.py

Generation tokens = sampled response tokens; update tokens = response tokens x epochs (each
epoch recomputes every token's log-prob, value and entropy with gradients). Writes
benchmarks/results/lm_throughput.{json,md}. Timings depend on the machine's load (reported).
"""

from __future__ import annotations

import json
import os
import random
import resource
import tempfile
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
SIZES = {
    "demo (2 layers, 64 wide, 102k params)": {"n_layer": 2, "n_embd": 64, "n_head": 4, "pos": 16},
    "4 layers, 128 wide": {"n_layer": 4, "n_embd": 128, "n_head": 4, "pos": 64},
}


def measure(size: dict[str, int], max_new_tokens: int, rounds: int = 5) -> dict[str, float]:
    import torch

    from trainers.lm.rewards import build_reward
    from trainers.lm.rollout import PromptRecord
    from trainers.lm.sampling import SamplingSettings
    from trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer
    from trainers.lm.trainer import LMPPOTrainer
    from trainers.lm.update import UpdateSettings

    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokenizer = train_char_tokenizer(["0123456789+="])
    model = build_tiny_gpt2(
        tokenizer, size["n_layer"], size["n_embd"], size["n_head"], n_positions=size["pos"]
    )
    folder = save_model(model, tokenizer, tempfile.mkdtemp(prefix="lm_bench_"))
    trainer = LMPPOTrainer(
        folder,
        reward=build_reward("length_penalty"),
        batch_size=64,
        sampling=SamplingSettings(max_new_tokens=max_new_tokens),
        update=UpdateSettings(epochs=4, minibatch_size=16),
        learning_rate=1e-4,
    )
    rng = random.Random(0)
    prompts = [PromptRecord(f"{rng.randint(0, 49)}+{rng.randint(0, 49)}=") for _ in range(64)]
    generation = update = 0.0
    tokens = 0
    for _ in range(rounds):
        started = time.perf_counter()
        batch = trainer.collect(prompts)
        generation += time.perf_counter() - started
        tokens += int(batch.action_mask.sum())
        started = time.perf_counter()
        trainer.update(batch)
        update += time.perf_counter() - started
    return {
        "params": sum(p.numel() for p in trainer.policy.parameters()),
        "max_new_tokens": max_new_tokens,
        "response_tokens_per_rollout": tokens / rounds,
        "rollout_tokens_per_second": tokens / generation,
        "update_tokens_per_second": 4 * tokens / update,
        "rollout_seconds": generation / rounds,
        "update_seconds": update / rounds,
    }


def main() -> None:
    rows = {}
    for name, size in SIZES.items():
        # Responses never end early: the length penalty model is untrained, EOS is rare.
        rows[name] = measure(size, max_new_tokens=min(32, size["pos"] - 8))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    load = os.getloadavg()
    result = {"rows": rows, "peak_rss_bytes": peak, "load_average": load}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "lm_throughput.json").write_text(json.dumps(result, indent=2))
    lines = [
        "# Language-model PPO trainer throughput",
        "",
        f"`python benchmarks/lm_throughput.py`: one torch thread, 64 prompts per rollout, "
        f"4 epochs x minibatches of 16; 2 shared CPU cores, load average {load[0]:.1f}. The "
        "rollout includes sampling, the old-policy and reference forward passes and the reward.",
        "",
        "| model | params | response tokens / rollout | rollout tokens/s | update tokens/s |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(
            f"| {name} | {r['params']:,} | {r['response_tokens_per_rollout']:.0f} | "
            f"{r['rollout_tokens_per_second']:.0f} | {r['update_tokens_per_second']:.0f} |"
        )
    lines += [
        "",
        f"Peak resident memory of the process (both models, in turn): {peak / 2**20:.0f} MiB.",
    ]
    (RESULTS / "lm_throughput.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
