"""The documentation site, built once per test session with `mkdocs build --strict`."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from site_build import REPO_ROOT, SiteBuild


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SiteBuild]:
    """`mkdocs build --strict` of this tree into a temporary folder (a warning fails it)."""
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # a banner about MkDocs 2, not our site
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    yield SiteBuild(folder, done.stdout + done.stderr)
