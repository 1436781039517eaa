"""Trainable parameters and peak memory of LM PPO updates with and without LoRA.

    PYTHONPATH=platform:. python benchmarks/throughput/lm_lora_memory.py

Each variant runs in its own process (peak RSS is per process): a tiny GPT-2 built from a
config (nothing downloaded), GRPO with group 4, 3 updates. Results: benchmarks/results/
lm_lora_memory.md.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def one(variant: str, folder: str) -> dict[str, float]:
    import torch

    torch.set_num_threads(1)
    from ppo_platform.trainers.lm.lora import LoRASettings, trainable_parameters
    from ppo_platform.trainers.lm.rewards import build_reward
    from ppo_platform.trainers.lm.rollout import PromptRecord, RolloutSettings
    from ppo_platform.trainers.lm.tiny import build_tiny_gpt2, save_model, train_char_tokenizer
    from ppo_platform.trainers.lm.trainer import LMPPOTrainer
    from ppo_platform.trainers.lm.update import UpdateSettings

    torch.manual_seed(0)
    tokenizer = train_char_tokenizer(["0123456789+="])
    model = build_tiny_gpt2(tokenizer, n_layer=4, n_embd=256, n_head=4, n_positions=32)
    save_model(model, tokenizer, folder)
    del model
    lora = LoRASettings(rank=8, alpha=16, target_modules=("c_attn",)) if variant == "lora" else None
    trainer = LMPPOTrainer(
        folder,
        reward=build_reward("contains", {"text": "1"}),
        rollout=RolloutSettings(estimator="grpo", group_size=4),
        update=UpdateSettings(epochs=2, minibatch_size=8),
        batch_size=8,
        lora=lora,
    )
    prompts = [PromptRecord(f"{a}+{b}=", str(a + b)) for a in range(4) for b in range(4)]
    trainer.learn(prompts, 3)
    return {
        "trainable_parameters": trainable_parameters(trainer.policy),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", nargs="?", choices=("full", "lora"), help="(internal) one")
    parser.add_argument("folder", nargs="?", help="(internal) where that variant's model goes")
    args = parser.parse_args()
    if args.variant and args.folder:
        print(json.dumps(one(args.variant, args.folder)))
        return
    rows = {}
    for variant in ("full", "lora", "full", "lora"):  # alternating, the last pair kept
        with tempfile.TemporaryDirectory() as folder:
            out = subprocess.run(
                [sys.executable, __file__, variant, folder],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        rows[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
