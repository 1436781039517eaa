"""Layout guards: no `platform` shadowing; imports flow api -> ppo_platform -> trainers."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def imported_modules(path: Path) -> set[str]:
    """The module of every absolute import in a Python file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def imported_top_level_names(path: Path) -> set[str]:
    """Top-level package names of every absolute import in a Python file."""
    return {name.split(".")[0] for name in imported_modules(path)}


def files_importing(folder: Path, forbidden: set[str]) -> dict[str, set[str]]:
    """Files under `folder` (links not followed) importing a module in or under `forbidden`."""
    found = {}
    for path in sorted(folder.rglob("*.py")):
        bad = {
            name
            for name in imported_modules(path)
            if any(name == f or name.startswith(f + ".") for f in forbidden)
        }
        if bad:
            found[str(path.relative_to(REPO_ROOT))] = bad
    return found


PLATFORM = REPO_ROOT / "platform" / "ppo_platform"
# ppo_platform's sub-packages other than the trainers: what the trainers must not import.
NOT_TRAINERS = {
    f"ppo_platform.{entry.stem}" for entry in PLATFORM.iterdir() if entry.name != "trainers"
} - {"ppo_platform.__init__", "ppo_platform.__pycache__"}


def test_platform_folder_has_no_init_file():
    assert (REPO_ROOT / "platform" / "ppo_platform" / "__init__.py").is_file()
    assert not (REPO_ROOT / "platform" / "__init__.py").exists()


def test_stdlib_platform_module_still_works_from_the_repo_root():
    code = "import platform; print(platform.__file__); print(platform.system())"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "platform")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    module_file, system = done.stdout.splitlines()
    assert system
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    assert Path(module_file).resolve().parent == stdlib


def test_stdlib_platform_module_is_the_one_pytest_sees():
    import platform

    assert platform.system()
    assert (
        Path(platform.__file__).resolve().parent == Path(sysconfig.get_paths()["stdlib"]).resolve()
    )


def test_trainers_import_nothing_of_ppo_platform_but_the_trainers():
    assert {"ppo_platform.api", "ppo_platform.cli", "ppo_platform.errors"} <= NOT_TRAINERS
    assert files_importing(REPO_ROOT / "trainers", NOT_TRAINERS | {"trainers", "api"}) == {}


def test_ppo_platform_never_imports_api():
    assert files_importing(PLATFORM, {"ppo_platform.api", "api"}) == {}


def test_trainers_and_api_are_linked_into_ppo_platform():
    for name in ("trainers", "api"):
        link = PLATFORM / name
        assert link.is_symlink() and link.resolve() == (REPO_ROOT / name).resolve()


@pytest.mark.parametrize("folder", ["trainers", "platform/ppo_platform"])
def test_import_scan_sees_the_package_files(folder):
    # Guards the two tests above against passing vacuously on an empty or moved folder.
    assert any((REPO_ROOT / folder).rglob("*.py"))


def test_no_test_module_imports_a_conftest_by_its_bare_name():
    # In a full run `conftest` is whichever conftest pytest imported first: import helpers by
    # their package path (`from tests.api_tests.conftest import ...`).
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for path in sorted((REPO_ROOT / "tests").rglob("*.py"))
        if "conftest" in imported_top_level_names(path)
    ]
    assert offenders == []
