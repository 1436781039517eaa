"""Errors of the language-model trainer; each message names the argument, the value and the fix."""

from ppo_platform.trainers.errors import TrainerError


class LMTrainerError(TrainerError, ValueError):
    """Invalid input to the language-model PPO trainer (bad model folder, setting or batch)."""
