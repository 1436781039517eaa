"""The import contract in pyproject.toml ([tool.importlinter]) holds, and would catch a breach."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import tomllib

REPO_ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# The layers contract's name as pyproject.toml spells it: renaming a layer cannot break this test.
_CONTRACTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
LAYERS_CONTRACT = next(
    contract["name"]
    for contract in _CONTRACTS["contracts"]
    if contract["type"] == "layers" and contract["layers"][0] == "ppo_platform.api"
)


def lint_imports(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run lint-imports in `cwd`, analysing the packages found under `cwd` (and nothing else)."""
    env = {
        **os.environ,
        "PYTHONPATH": str(cwd / "platform"),
        "COLUMNS": "200",  # keep contract names on one line in the report
    }
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_repository_keeps_every_import_contract():
    done = lint_imports(REPO_ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_lint_imports_fails_on_an_upward_import_in_a_fixture_package(tmp_path):
    package = tmp_path / "fakepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("from fakepkg import low\n")
    (package / "low.py").write_text("from fakepkg import high\n")
    config = tmp_path / "contracts.toml"
    config.write_text(
        "[tool.importlinter]\n"
        'root_packages = ["fakepkg"]\n\n'
        "[[tool.importlinter.contracts]]\n"
        'name = "fake layers"\n'
        'type = "layers"\n'
        'layers = ["fakepkg.high", "fakepkg.low"]\n'
    )

    done = lint_imports(tmp_path, "--config", str(config))

    assert done.returncode != 0
    assert "fake layers BROKEN" in done.stdout
    assert "fakepkg.low is not allowed to import fakepkg.high" in done.stdout


def test_our_contract_catches_a_function_level_upward_import(tmp_path):
    for folder in ("platform/ppo_platform", "trainers", "api"):  # the links copied as links
        shutil.copytree(
            REPO_ROOT / folder,
            tmp_path / folder,
            symlinks=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    shutil.copy(REPO_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "platform" / "ppo_platform" / "errors.py"
    errors.write_text(
        errors.read_text() + "\n\ndef _sneaky():\n    from ppo_platform.cli import main\n"
    )

    done = lint_imports(tmp_path)

    assert done.returncode != 0
    assert LAYERS_CONTRACT in " ".join(done.stdout.split())  # a long name may wrap
    assert "ppo_platform.errors is not allowed to import ppo_platform.cli" in done.stdout
