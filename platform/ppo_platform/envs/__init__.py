"""Environments the platform can build: env packages named by the operator, the wrapper
vocabulary (wrappers as data), and the one picklable env factory every process uses.

Nothing here imports gymnasium or SB3 at import time: `validate` and the API stay fast.
"""

from ppo_platform.envs.packages import (
    ENV_PACKAGES_SETTING,
    import_env_packages,
    imported_env_packages,
)
from ppo_platform.envs.registry import register_wrapper, registered_wrappers

__all__ = [
    "ENV_PACKAGES_SETTING",
    "import_env_packages",
    "imported_env_packages",
    "register_wrapper",
    "registered_wrappers",
]
