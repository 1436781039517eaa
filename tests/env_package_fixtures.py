"""A user's own environments, brought in the two ways an operator can name them: a plain module
on PYTHONPATH (tests/fixtures/env_packages/ppo_test_local_envs.py) and a package installed with
pip (built here from a pyproject, installed into a target folder put on PYTHONPATH)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LOCAL_DIR = Path(__file__).resolve().parent / "fixtures" / "env_packages"
LOCAL_MODULE = "ppo_test_local_envs"
LOCAL_ENV = "LocalCorridor-v0"
LOCAL_PIXELS_ENV = "LocalPixels-v0"
LOCAL_NO_RENDER_ENV = "LocalThermostat-v0"
LOCAL_FAULTY_ENV = "LocalLeakyValve-v0"
LOCAL_BEACON_ENV = "LocalBeacon-v0"
INSTALLED_MODULE = "ppo_test_installed_envs"
INSTALLED_ENV = "InstalledCorridor-v0"

_PACKAGE_INIT = '''"""An env package installed with pip: it registers InstalledCorridor-v0."""
import gymnasium
import numpy as np
from gymnasium import spaces


class Corridor(gymnasium.Env):
    def __init__(self, length=4, render_mode=None):
        self.length = length
        self.observation_space = spaces.Box(0.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.position = 0

    def _obs(self):
        return np.array([self.position / self.length], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.position = 0
        return self._obs(), {}

    def step(self, action):
        self.position = max(0, self.position + (1 if action == 1 else -1))
        done = self.position >= self.length
        return self._obs(), (1.0 if done else -0.01), done, False, {}


if "InstalledCorridor-v0" not in gymnasium.registry:
    gymnasium.register(id="InstalledCorridor-v0", entry_point=Corridor, max_episode_steps=40)
'''

_PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "ppo-test-installed-envs"
version = "0.1.0"

[tool.setuptools]
packages = ["ppo_test_installed_envs"]
"""


def install_env_package(workdir: Path) -> Path:
    """Build the package from source and `pip install --target` it; returns the target folder
    (to put on PYTHONPATH). The package is not importable from anywhere else."""
    source = workdir / "source"
    (source / INSTALLED_MODULE).mkdir(parents=True)
    (source / INSTALLED_MODULE / "__init__.py").write_text(_PACKAGE_INIT)
    (source / "pyproject.toml").write_text(_PYPROJECT)
    target = workdir / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    assert (target / INSTALLED_MODULE / "__init__.py").exists()
    return target


def python_path(*folders: Path) -> str:
    """PYTHONPATH with `folders` first, then what the test process already has."""
    current = os.environ.get("PYTHONPATH")
    return os.pathsep.join([*map(str, folders), *([current] if current else [])])
