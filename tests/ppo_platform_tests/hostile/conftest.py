"""Fixtures of the hostile-input tests (helpers live in hostile_cli.py)."""

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
