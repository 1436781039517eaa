"""Fixtures of the hostile-input tests (helpers live in hostile_cli.py).

The hostile tests stay together, one class of attack per module; what each one guards:
- test_paths: spec/names.py, tracking read paths, run folders
- test_outputs: planner and tuning `--out` folders
- test_interruptions: execution/signals.py, training/runner.py, sweeps
- test_resources: spec/resources.py
- test_tracebacks: cli/ and errors.py
- test_smaller: spec/yaml_source.py, spec/loader.py, tracking/tags.py
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_cli import TINY_GRID


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., Path]:
    """Write TINY_GRID (or the given text) plus extra YAML lines to a fresh file."""
    counter = iter(range(1_000_000))

    def write(extra: str = "", base: str = TINY_GRID) -> Path:
        path = tmp_path / f"spec-{next(counter)}.yaml"
        path.write_text(base + extra)
        return path

    return write
