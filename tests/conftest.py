"""Fixtures shared by every test package: an isolated platform home with its own MLflow store."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import throwaway_postgres
from tiers import is_integration

TESTS = Path(__file__).resolve().parent

# MLflow's schema-migration INFO lines drown the useful output of a failing test.
logging.getLogger("mlflow").setLevel(logging.WARNING)
logging.getLogger("alembic").setLevel(logging.WARNING)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The integration tier (tests/tiers.py): `-m "not slow and not integration"` is the quick
    tier of unit tests, `make test-quick`."""
    for item in items:
        path = Path(str(item.path)).resolve()
        if path.is_relative_to(TESTS) and is_integration(path.relative_to(TESTS).as_posix()):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Tiny nets on a shared 2-core machine: extra intra-op threads only contend."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _use_home(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    from ppo_platform.settings import get_settings

    monkeypatch.setenv("PPO_PLATFORM_HOME", str(home))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()


@pytest.fixture
def platform_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh PPO_PLATFORM_HOME (and so a fresh SQLite MLflow store) for one test."""
    from ppo_platform.settings import get_settings

    _use_home(monkeypatch, tmp_path / "home")
    yield tmp_path / "home"
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One platform home per test module: creating an MLflow SQLite store costs seconds."""
    from ppo_platform.settings import get_settings

    monkeypatch = pytest.MonkeyPatch()
    home = tmp_path_factory.mktemp("platform_home")
    _use_home(monkeypatch, home)
    yield home
    monkeypatch.undo()
    get_settings.cache_clear()


@pytest.fixture(scope="module")
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server for one test module (skipped, with the reason, when the
    server binaries or psycopg are missing); its URL, database `postgres`."""
    with throwaway_postgres() as url:
        yield url
