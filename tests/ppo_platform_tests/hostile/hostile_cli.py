"""Helpers of the hostile-input tests: the CLI in-process, and what a clean refusal looks like.

A module of its own (not conftest): several test folders have a conftest.py, and
`from conftest import ...` would pick whichever was imported first.
"""

from __future__ import annotations

from typer.testing import CliRunner, Result

from ppo_platform.cli import app


def grid_spec(name: str, total_timesteps: int, every: int = 0) -> str:
    """A GridWorld spec of 32-step rollouts that evaluates and checkpoints `every` env steps
    (0: only at the end; otherwise keeping the last checkpoint)."""
    checkpoints = f"{{every_timesteps: {every}, keep_last: 1}}" if every else "{every_timesteps: 0}"
    return f"""\
name: {name}
env: {{id: ppo_platform/GridWorld-v0, n_envs: 1}}
rollout: {{n_steps: 32}}
update: {{epochs: 1, minibatch_size: 32}}
budget: {{total_timesteps: {total_timesteps}, seed: 0}}
evaluation: {{every_timesteps: {every}, episodes: 1}}
checkpoints: {checkpoints}
"""


TINY_GRID = grid_spec("hostile-tiny", 64)  # trains in about a second


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
