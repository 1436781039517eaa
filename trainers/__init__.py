"""trainers: stable-baselines3-based PPO trainers, the metrics they emit, and the LM trainer.

Knows nothing of YAML, pydantic or MLflow: everything takes typed arguments, like SB3 does.
Modules are imported explicitly (``from ppo_platform.trainers.ppo import PlatformPPO``) so that
importing one of them stays cheap. Environments (ids, vector envs, the platform's own) live in
``ppo_platform.envs``.
"""
