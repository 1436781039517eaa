"""How well does it learn: sample efficiency against rl-baselines3-zoo, the KL alerts judged
against the eval curves, the lesson exercises, the language-model demo and TRL."""
