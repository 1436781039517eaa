"""Interoperability with other PPO tools: rl-baselines3-zoo hyperparameter files as specs."""

from ppo_platform.interop.literals import Activation, LiteralError, parse_literal
from ppo_platform.interop.zoo_import import ZooImport, import_zoo, read_zoo_file, write_import

__all__ = [
    "Activation",
    "LiteralError",
    "ZooImport",
    "import_zoo",
    "parse_literal",
    "read_zoo_file",
    "write_import",
]
