"""Helpers of the hostile-input tests: the CLI in-process, and what a clean refusal looks like.

A module of its own (not conftest): several test folders have a conftest.py, and
`from conftest import ...` would pick whichever was imported first.
"""

from __future__ import annotations

from typer.testing import CliRunner, Result

from ppo_platform.cli import app

# A GridWorld run of 64 env steps: trains in about a second.
TINY_GRID = """\
name: hostile-tiny
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 32}
update: {epochs: 1, minibatch_size: 32}
budget: {total_timesteps: 64, seed: 0}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 0}
"""


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def assert_bad_input(result: Result, *fragments: str, max_lines: int = 12) -> None:
    """Exit 2, a short message naming what was wrong, no Python traceback."""
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert 1 <= len(result.output.strip().splitlines()) <= max_lines, result.output
    for fragment in fragments:
        assert fragment in result.output, result.output
