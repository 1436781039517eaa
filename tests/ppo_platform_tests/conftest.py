"""Shared helpers for the spec tests: write a spec to disk, load one, catch its single issue."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from ppo_platform.errors import SpecError, SpecIssue
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import load_spec_text

REPO_ROOT = Path(__file__).resolve().parents[2]

# The smallest valid spec; every other field takes its documented default.
MINIMAL_SPEC = "name: run\nenv: CartPole-v1\n"

# What the light paths (validate, plan, sweep expansion, the API) must never import.
HEAVY_MODULES = ("torch", "stable_baselines3", "mlflow", "optuna")


@pytest.fixture
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture
def minimal_spec() -> str:
    """Two lines: `name` on line 1, `env` on line 2; tests append from line 3 on."""
    return MINIMAL_SPEC


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[[str | bytes], Path]:
    """Write YAML text (or raw bytes) to a fresh file under tmp_path and return its path."""
    counter = iter(range(1_000_000))

    def write(content: str | bytes) -> Path:
        path = tmp_path / f"spec-{next(counter)}.yaml"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return write


@pytest.fixture
def load() -> Callable[..., ExperimentSpec]:
    """Load spec text the way the CLI does (validation and refusal rules included)."""

    def load_text(text: str, overrides: Iterable[str] = ()) -> ExperimentSpec:
        return load_spec_text(text, "spec.yaml", overrides)

    return load_text


@pytest.fixture
def single_issue() -> Callable[..., SpecIssue]:
    """Load spec text that must fail with exactly one issue, and return that issue."""

    def issue_of(text: str, overrides: Iterable[str] = ()) -> SpecIssue:
        with pytest.raises(SpecError) as caught:
            load_spec_text(text, "spec.yaml", overrides)
        issues = caught.value.issues
        assert len(issues) == 1, caught.value.render()
        return issues[0]

    return issue_of


@pytest.fixture
def heavy_imports_of() -> Callable[[str], list[str]]:
    """Run a Python snippet in a fresh interpreter at the repository root; return the heavy
    modules (HEAVY_MODULES) it left imported."""

    def run(snippet: str) -> list[str]:
        report = f"\nprint(','.join(n for n in {HEAVY_MODULES!r} if n in sys.modules))\n"
        done = subprocess.run(
            [sys.executable, "-c", "import sys\n" + snippet + report],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return [name for name in done.stdout.strip().split(",") if name]

    return run
