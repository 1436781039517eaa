"""Fixtures for the multi-node path: a Ray cluster, PostgreSQL, an MLflow tracking server, and
settings that point the platform at all three (see tests/cluster_services.py)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_services import Cluster, mlflow_server, ray_cluster, skip_or_fail
from postgres_server import create_database, throwaway_postgres


@pytest.fixture(scope="session")
def ray_address() -> Iterator[str]:
    """host:port of a two-node Ray cluster (CI's, or one started for this session)."""
    try:
        import ray
    except ImportError:
        skip_or_fail("ray is not installed (pip install '.[ray]')")
    address = os.environ.get("PPO_TEST_RAY_ADDRESS")
    if address:
        yield address
    else:
        with ray_cluster(nodes=2) as address:
            yield address
            ray.shutdown()  # before the cluster goes
    ray.shutdown()


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server's URL (database postgres): CI's, or a throwaway one."""
    url = os.environ.get("PPO_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    with throwaway_postgres() as url:
        yield url


@pytest.fixture(scope="session")
def mlflow_uri(postgres_url: str) -> Iterator[str]:
    """An MLflow tracking server with a PostgreSQL backend store (CI's, or one of our own)."""
    uri = os.environ.get("PPO_TEST_MLFLOW_URI")
    if uri:
        yield uri
        return
    with mlflow_server(create_database(postgres_url, f"mlflow_{uuid.uuid4().hex[:8]}")) as uri:
        yield uri


@pytest.fixture
def cluster(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    ray_address: str,
    postgres_url: str,
    mlflow_uri: str,
) -> Iterator[Cluster]:
    """This process set up for the cluster: Ray executor, fresh job and Optuna databases on
    PostgreSQL, the MLflow server, and a home every (local) node shares."""
    from ppo_platform.jobs.config import get_service_settings
    from ppo_platform.settings import get_settings

    suffix = uuid.uuid4().hex[:8]
    found = Cluster(
        home=tmp_path / "home",
        ray_address=ray_address,
        mlflow_uri=mlflow_uri,
        jobs_url=create_database(postgres_url, f"jobs_{suffix}"),
        optuna_url=create_database(postgres_url, f"optuna_{suffix}"),
    )
    for name, value in found.env().items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    get_service_settings.cache_clear()
    yield found
    get_settings.cache_clear()
    get_service_settings.cache_clear()
