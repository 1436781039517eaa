"""Fixtures of the tuning tests: a private platform home and tiny CartPole specs."""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS_ROOT = str(Path(__file__).resolve().parents[2])


def _prefer_the_installed_package() -> None:
    """With pytest's default `prepend` import mode, tests/ sits on sys.path, so `ppo_platform`
    could resolve to a test folder named like the package (a namespace package) and
    `ppo_platform.tuning` to this test folder. Drop tests/ from sys.path and forget those
    namespace modules, so the installed package is imported (spawned workers inherit
    sys.path too). The test folders are now named *_tests, so this is a safeguard."""
    while TESTS_ROOT in sys.path:
        sys.path.remove(TESTS_ROOT)
    for name in [n for n in sys.modules if n == "ppo_platform" or n.startswith("ppo_platform.")]:
        if getattr(sys.modules[name], "__file__", None) is None:
            del sys.modules[name]


_prefer_the_installed_package()

from ppo_platform.settings import Settings, get_settings  # noqa: E402
from ppo_platform.spec.experiment import ExperimentSpec  # noqa: E402
from ppo_platform.spec.loader import set_dotted, validate_data  # noqa: E402


@pytest.fixture(autouse=True)
def _installed_package_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest puts tests/ back on sys.path when it collects tests/test_*.py: remove it again
    for each test here (spawned worker processes start from this sys.path)."""
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != TESTS_ROOT])


# ~1000 env steps per run: a few seconds of training on a shared 2-core machine.
TINY_SPEC: dict[str, Any] = {
    "name": "tiny-tune",
    "env": {"id": "CartPole-v1", "n_envs": 2},
    "rollout": {"n_steps": 64},
    "update": {"epochs": 2, "minibatch_size": 64, "learning_rate": 3e-3},
    "budget": {"total_timesteps": 1000, "seed": 0},
    "evaluation": {"every_timesteps": 250, "episodes": 2},
    "checkpoints": {"every_timesteps": 0},
    "tune": {
        "n_trials": 2,
        "seeds_per_trial": 1,
        "sampler": {"type": "random", "seed": 0},
        "pruner": {"type": "none"},
        "space": {"update.learning_rate.start": {"type": "float", "low": 1e-3, "high": 3e-3}},
    },
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A fresh PPO_PLATFORM_HOME (MLflow SQLite store, journal, run folders) per test."""
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    yield get_settings()
    get_settings.cache_clear()


def make_spec(**changes: Any) -> ExperimentSpec:
    """TINY_SPEC with dotted-path changes, e.g. make_spec(**{"tune.n_trials": 3})."""
    data = copy.deepcopy(TINY_SPEC)
    for path, value in changes.items():
        set_dotted(data, path, value)
    return validate_data(data)


@pytest.fixture(scope="session")
def tiny_spec() -> Callable[..., ExperimentSpec]:
    """`make_spec` as a fixture (session scope: module-scoped studies use it too)."""
    return make_spec


# A three-trial study of 512 env steps per trial, evaluated twice: the racing and verification
# tests add their own `tune.*` block to it.
THREE_TRIALS: dict[str, Any] = {
    "budget.total_timesteps": 512,
    "evaluation.every_timesteps": 256,
    "tune.n_trials": 3,
}


@pytest.fixture(scope="session")
def three_trial_spec() -> Callable[..., ExperimentSpec]:
    """`make_spec` of THREE_TRIALS plus the dotted-path `changes` given."""
    return lambda **changes: make_spec(**THREE_TRIALS, **changes)
