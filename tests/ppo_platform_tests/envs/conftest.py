"""Own environments for the env tests: the local module and an installed package, importable in
this process and in every child process (sys.path and PYTHONPATH)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from env_package_fixtures import LOCAL_DIR, install_env_package, python_path


@pytest.fixture(scope="session")
def installed_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder an env package was pip-installed into (built once per session)."""
    return install_env_package(tmp_path_factory.mktemp("env_package"))


@pytest.fixture
def own_envs_importable(monkeypatch: pytest.MonkeyPatch, installed_site: Path) -> Iterator[None]:
    """Both own env packages importable here and in child processes; the env-package setting
    starts empty and is restored afterwards."""
    from ppo_platform.settings import get_settings

    monkeypatch.syspath_prepend(str(LOCAL_DIR))
    monkeypatch.syspath_prepend(str(installed_site))
    monkeypatch.setenv("PYTHONPATH", python_path(LOCAL_DIR, installed_site))
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", "")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()
