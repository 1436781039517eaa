"""ppo_platform: declarative PPO experiments.

Light imports only here: `validate` and `plan` must not pay for torch, SB3 or MLflow.
"""

from ppo_platform import tracing as tracing  # first: marks when this process started
from ppo_platform.errors import PlatformError, SpecError, SpecIssue, TrainingError
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import dump_spec, load_spec, load_spec_text, validate_data

__version__ = "0.1.0"

__all__ = [
    "ExperimentSpec",
    "PlatformError",
    "SpecError",
    "SpecIssue",
    "TrainingError",
    "__version__",
    "dump_spec",
    "load_spec",
    "load_spec_text",
    "validate_data",
]
