"""trainers: stable-baselines3-based PPO trainers, diagnostics and environments.

Knows nothing of YAML, pydantic or MLflow: everything takes typed arguments, like SB3 does.
Modules are imported explicitly (``from trainers.ppo import MonitoredPPO``) so that importing
``trainers.envs`` stays cheap.
"""
