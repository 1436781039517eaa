"""Throughput of the language-model PPO trainer: tokens per second for generation and for the
update, and peak memory, on tiny GPT-2s built from configs (nothing downloaded).

    python -m benchmarks.throughput.lm_throughput [--rounds 5]

Generation tokens = sampled response tokens; update tokens = response tokens x epochs (each
epoch recomputes every token's log-prob, value and entropy with gradients). Writes
benchmarks/results/lm_throughput.{json,md}. Timings depend on the machine's load (reported).
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile

from benchmarks.harness import (
    command_line,
    load1,
    machine,
    measured,
    peak_rss_mib,
    timed,
    write_results,
)

os.environ["HF_HUB_OFFLINE"] = "1"
SIZES = {
    "demo (2 layers, 64 wide, 102k params)": {"n_layer": 2, "n_embd": 64, "n_head": 4, "pos": 16},
    "4 layers, 128 wide": {"n_layer": 4, "n_embd": 128, "n_head": 4, "pos": 64},
}


def measure(size: dict[str, int], max_new_tokens: int, rounds: int = 5) -> dict[str, float]:
    import torch

    from ppo_platform.trainers.lm.rewards import build_reward
    from ppo_platform.trainers.lm.rollout import PromptRecord
    from ppo_platform.trainers.lm.sampling import SamplingSettings
    from ppo_platform.trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer
    from ppo_platform.trainers.lm.trainer import LMPPOTrainer
    from ppo_platform.trainers.lm.update import UpdateSettings

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
        batch, collecting = measured(lambda: trainer.collect(prompts))
        generation += collecting["wall_s"]
        tokens += int(batch.action_mask.sum())
        update += timed(lambda b=batch: trainer.update(b))["wall_s"]
    return {
        "params": sum(p.numel() for p in trainer.policy.parameters()),
        "max_new_tokens": max_new_tokens,
        "response_tokens_per_rollout": tokens / rounds,
        "rollout_tokens_per_second": tokens / generation,
        "update_tokens_per_second": 4 * tokens / update,
        "rollout_seconds": generation / rounds,
        "update_seconds": update / rounds,
    }


def render(result: dict) -> str:
    lines = [
        "# Language-model PPO trainer throughput",
        "",
        f"`{result['command']}`: one torch thread, 64 prompts per rollout, "
        f"4 epochs x minibatches of 16; {result['machine']['cores']} shared CPU cores, load "
        f"average {result['load1']:.1f}. The rollout includes sampling, the old-policy and "
        "reference forward passes and the reward.",
        "",
        "| model | params | response tokens / rollout | rollout tokens/s | update tokens/s |",
        "|---|---|---|---|---|",
    ]
    for name, r in result["rows"].items():
        lines.append(
            f"| {name} | {r['params']:,} | {r['response_tokens_per_rollout']:.0f} | "
            f"{r['rollout_tokens_per_second']:.0f} | {r['update_tokens_per_second']:.0f} |"
        )
    lines += [
        "",
        "Peak resident memory of the process (both models, in turn): "
        f"{result['peak_rss_mib']:.0f} MiB.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rollouts and updates per model")
    args = parser.parse_args()
    rows = {}
    for name, size in SIZES.items():
        # Responses never end early: the length penalty model is untrained, EOS is rare.
        rows[name] = measure(size, max_new_tokens=min(32, size["pos"] - 8), rounds=args.rounds)
    result = {
        "command": command_line("benchmarks.throughput.lm_throughput"),
        "machine": machine(),
        "rows": rows,
        "peak_rss_mib": peak_rss_mib(),
        "load1": load1(),
    }
    write_results(result, "lm_throughput", render)


if __name__ == "__main__":
    main()
