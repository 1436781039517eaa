"""docker/: checked statically (no Docker engine on these machines). The compose file parses;
every service's settings, ports and commands agree with what the code reads; the Dockerfile
installs what the Makefile installs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from ppo_platform.jobs.config import ServiceSettings
from ppo_platform.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
PLATFORM_SERVICES = ("mlflow", "ray-head", "ray-worker", "api")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text())


def env_names(model: type) -> set[str]:
    names = set()
    for name, field in model.model_fields.items():  # type: ignore[attr-defined]
        alias = field.validation_alias
        names.add(alias if isinstance(alias, str) else f"PPO_PLATFORM_{name.upper()}")
    return names


def arg(command: list[str], option: str) -> str:
    """The value of `--option=value` or `--option value` in a command."""
    for index, word in enumerate(command):
        if word.startswith(f"{option}="):
            return word.split("=", 1)[1]
        if word == option:
            return command[index + 1]
    raise AssertionError(f"{option} not in {command}")


def test_the_compose_file_has_every_service(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"postgres", "mlflow", "ray-head", "ray-worker", "api"}


def test_every_platform_variable_is_a_setting_the_code_reads(compose: dict[str, Any]) -> None:
    known = env_names(Settings) | env_names(ServiceSettings)
    for name in PLATFORM_SERVICES:
        environment = compose["services"][name]["environment"]
        unknown = {key for key in environment if key not in known}
        assert not unknown, f"{name}: {unknown} are read by no setting"
        Settings.model_validate({k: v for k, v in environment.items() if k in env_names(Settings)})


def test_addresses_in_the_settings_match_the_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    env = services["api"]["environment"]
    tracking = urlsplit(env["MLFLOW_TRACKING_URI"])
    mlflow_command = services["mlflow"]["command"]
    assert tracking.hostname == "mlflow" and str(tracking.port) == arg(mlflow_command, "--port")
    head_host, head_port = env["PPO_PLATFORM_RAY_ADDRESS"].split(":")
    assert head_host == "ray-head" and head_port == arg(services["ray-head"]["command"], "--port")
    assert arg(services["ray-worker"]["command"], "--address") == env["PPO_PLATFORM_RAY_ADDRESS"]
    assert "8000:8000" in services["api"]["ports"]
    assert arg(services["api"]["command"], "--port") == "8000"


def test_every_database_url_names_the_postgres_service_and_a_created_database(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    created = {services["postgres"]["environment"]["POSTGRES_DB"]}
    created |= set(
        re.findall(r"CREATE DATABASE (\w+);", (DOCKER / "postgres-init.sql").read_text())
    )
    env = services["api"]["environment"]
    urls = [
        env["PPO_PLATFORM_JOBS_DATABASE_URL"],
        env["PPO_PLATFORM_OPTUNA_STORAGE_URL"],
        arg(services["mlflow"]["command"], "--backend-store-uri"),
    ]
    for url in urls:
        parts = urlsplit(url.replace("${POSTGRES_PASSWORD:-ppo}", "pw"))
        assert parts.scheme == "postgresql+psycopg" and parts.hostname == "postgres"
        assert parts.port == 5432 and parts.path.lstrip("/") in created
    mount = "./postgres-init.sql:/docker-entrypoint-initdb.d/10-databases.sql:ro"
    assert mount in services["postgres"]["volumes"]


def test_start_order_waits_for_healthy_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for needed, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"}, name
            assert "healthcheck" in services[needed] or needed == "api", needed
    assert set(services["api"]["depends_on"]) == {"postgres", "mlflow", "ray-head"}


def test_ray_workers_scale_and_every_node_shares_the_data_volume(compose: dict[str, Any]) -> None:
    worker = compose["services"]["ray-worker"]
    assert "container_name" not in worker and "ports" not in worker  # --scale needs neither
    for name in PLATFORM_SERVICES:
        assert "ppo-data:/data" in compose["services"][name]["volumes"], name
    assert compose["services"]["api"]["environment"]["PPO_PLATFORM_HOME"] == "/data"


def test_the_dockerfile_installs_what_the_makefile_installs() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text()
    makefile = (ROOT / "Makefile").read_text()
    torch_pin = re.search(r"TORCH_PIN \?= (\S+)", makefile)
    assert torch_pin and f"--index-url https://download.pytorch.org/whl/cpu {torch_pin[1]}" in (
        dockerfile
    )
    assert 'pip install ".[postgres,ray]"' in dockerfile
    assert re.search(
        r"^USER ppo$", dockerfile, re.M
    ) and "useradd --create-home --uid 1000 ppo" in (dockerfile)
    healthcheck = dockerfile[dockerfile.index("HEALTHCHECK") :]
    assert "http://127.0.0.1:8000/healthz" in healthcheck
    assert 'CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]' in dockerfile
    assert "EXPOSE 8000" in dockerfile


def test_the_ray_extra_is_pinned_to_the_ray_the_tests_run() -> None:
    pin = re.search(r'^ray = \["ray==(\S+)"\]$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert pin is not None
    ray = pytest.importorskip("ray")
    assert ray.__version__ == pin[1]
