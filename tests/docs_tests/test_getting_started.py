"""The commands of docs/getting-started.md run as written, with budgets cut to a few updates.

A fenced block preceded by `<!-- getting-started: run [ARGS] -->` is run line by line from a
fresh folder (with the repository's `specs/` in it), ARGS appended to each command: the page
shows the real command, the test adds only `--set` overrides that make it cheap.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from site_build import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "getting-started.md"
MARKED_BLOCK = re.compile(
    r"<!-- getting-started: run(?P<args>[^>]*)-->\s*\n```(?:bash|sh|shell)\n(?P<body>.*?)\n```",
    flags=re.S,
)


def marked_commands(markdown: str) -> list[list[str]]:
    """Every command of every marked block, with the marker's extra arguments appended."""
    commands = []
    for block in MARKED_BLOCK.finditer(markdown):
        extra = shlex.split(block["args"])
        for line in block["body"].splitlines():
            words = shlex.split(line, comments=True)
            if words:
                commands.append(words + extra)
    return commands


def test_the_page_marks_the_tour_of_commands() -> None:
    commands = marked_commands(PAGE.read_text(encoding="utf-8"))
    subcommands = [command[1] for command in commands if command[0] == "ppo-platform"]
    assert {"validate", "run", "plan", "sweep", "tune"} <= set(subcommands), subcommands
    assert all(command[0] == "ppo-platform" for command in commands), commands


@pytest.mark.slow
def test_the_getting_started_commands_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "specs").symlink_to(REPO_ROOT / "specs")
    scripts = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}",
        "PPO_PLATFORM_HOME": str(tmp_path / "home"),
        "PPO_PLATFORM_TORCH_THREADS": "1",
    }
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PPO_PLATFORM_OUTPUTS_DIR", None)
    for command in marked_commands(PAGE.read_text(encoding="utf-8")):
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=300
        )
        shown = shlex.join(command)
        assert done.returncode == 0, f"{shown}\n{done.stdout}\n{done.stderr}"
        if command[1] == "run":
            assert "completed: run " in done.stdout, (shown, done.stdout)
        if command[1] == "plan":
            assert (work / "outputs" / "spec.yaml").is_file()
            assert (work / "outputs" / "skill-ppo-trainer.md").is_file()
        if command[1] == "tune":
            assert list((work / "outputs").glob("tune-*/best_spec.yaml")), done.stdout
