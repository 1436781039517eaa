"""`serve` with an env package that cannot be imported answers in one line and exits 2 (bad
input), like every other command, before uvicorn starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ppo_platform.errors import EXIT_BAD_INPUT


def _serve(tmp_path: Path, *args: str, packages: str = "") -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PPO_PLATFORM_HOME": str(tmp_path / "home"),
        "PPO_PLATFORM_ENV_PACKAGES": packages,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "serve", "--port", "1", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "source", "reason"),
    [
        ("greenhouse_envs_missing", None, "ModuleNotFoundError"),
        ("greenhouse_envs_broken", "raise RuntimeError('sensor table missing')\n", "RuntimeError"),
    ],
)
def test_an_env_package_that_cannot_be_imported_is_one_line_and_exit_2(
    tmp_path: Path, module: str, source: str | None, reason: str
) -> None:
    if source is not None:
        (tmp_path / f"{module}.py").write_text(source)
    for done in (_serve(tmp_path, packages=module), _serve(tmp_path, "--env-package", module)):
        assert done.returncode == EXIT_BAD_INPUT, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, done.stderr
        assert lines[0].startswith(f"error: PPO_PLATFORM_ENV_PACKAGES = '{module}'")
        assert f"env package {module} cannot be imported: {reason}" in lines[0]
        assert "Fix:" in lines[0]
