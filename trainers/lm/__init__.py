"""PPO on local causal language models (the training contract:
docs/guides/language-models.md), typed arguments only.

Import the modules explicitly (``from ppo_platform.trainers.lm.trainer import LMPPOTrainer``):
transformers
is imported only where a model or tokenizer is loaded, so `ppo_platform.trainers.lm.rewards` stays
cheap.
"""
