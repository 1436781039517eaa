"""jax and EnvPool are imported only where a run uses them, and never move numpy's global
random state: jax draws from it at import, and stable-baselines3 draws each run's minibatches
from it after seeding, so a first import mid-run made a process's first run differ from every
later run of the same seed (a sweep member on a warm worker differed from a cold process)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

GRIDWORLD_RUN = """
import sys
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.training.resolved import vectorization_reason
from ppo_platform.training.runner import run_spec

spec = load_spec_text('''name: plain
env: {id: ppo_platform/GridWorld-v0, n_envs: 2}
rollout: {n_steps: 32}
update: {epochs: 1, minibatch_size: 32}
budget: {total_timesteps: 64}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 0}
''', "plain.yaml")
print("outcome", run_spec(spec).outcome)
print("reason", vectorization_reason(spec, False))
print("imported", sorted(name for name in ("envpool", "jax") if name in sys.modules))
"""

DRAW_AFTER_IMPORT = """
import sys
import numpy as np
from ppo_platform.trainers.quiet_imports import import_keeping_numpy_rng

np.random.seed(7)
expected = np.random.rand(3).tolist()
np.random.seed(7)
import_keeping_numpy_rng(sys.argv[1])
print(sys.argv[1] in sys.modules, np.random.rand(3).tolist() == expected)
"""


def _run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_gridworld_run_imports_neither_envpool_nor_jax(platform_home: object) -> None:
    lines = _run(GRIDWORLD_RUN).splitlines()
    assert lines[-3:] == [
        "outcome completed",
        "reason auto: no native vector env (ppo_platform/GridWorld-v0 has no native vector env"
        " in gymnasium's registry); not EnvPool (auto picks it for ALE games and MuJoCo only)",
        "imported []",
    ]


@pytest.mark.parametrize("module", ["jax", "envpool"])
def test_importing_jax_or_envpool_leaves_numpy_global_random_state_as_it_was(
    module: str,
) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    assert _run(DRAW_AFTER_IMPORT, module).split() == ["True", "True"]
