"""The service trains the environments its operator's env packages register, lists them, and
refuses a spec that names code."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from env_package_fixtures import (
    INSTALLED_ENV,
    INSTALLED_MODULE,
    LOCAL_DIR,
    LOCAL_ENV,
    LOCAL_FAULTY_ENV,
    LOCAL_MODULE,
    install_env_package,
    python_path,
)

from tests.api_tests.conftest import KEYS, REPO_ROOT, Server, start_server, submit, wait_for

OWN_ENV_SPEC = """name: own-env
env: {{id: {env}, n_envs: 2}}
rollout: {{n_steps: 32}}
update: {{epochs: 2, minibatch_size: 32}}
budget: {{total_timesteps: 128}}
evaluation: {{every_timesteps: 64, episodes: 2, async: true}}
checkpoints: {{every_timesteps: 0}}
"""


@pytest.fixture(scope="module")
def env_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A service whose operator named a local module and a pip-installed env package."""
    site = install_env_package(tmp_path_factory.mktemp("env_package"))
    running = start_server(
        tmp_path_factory.mktemp("api_envs"),
        PYTHONPATH=python_path(REPO_ROOT / "platform", REPO_ROOT, LOCAL_DIR, site),
        PPO_PLATFORM_ENV_PACKAGES=f"{LOCAL_MODULE},{INSTALLED_MODULE}",
    )
    yield running
    running.kill(signal.SIGTERM)


def test_the_service_lists_the_env_ids_it_can_train(env_server: Server) -> None:
    with env_server.client() as alice:
        answer = alice.get("/v1/envs", params={"contains": "corridor"})
        everything = alice.get("/v1/envs").json()
    assert answer.status_code == 200
    assert answer.json()["env_ids"] == [INSTALLED_ENV, LOCAL_ENV]
    assert {LOCAL_MODULE, INSTALLED_MODULE} <= set(answer.json()["env_packages"])
    assert "CartPole-v1" in everything["env_ids"]


def test_listing_envs_needs_an_api_key(env_server: Server) -> None:
    with env_server.client(owner=None) as anonymous:
        assert anonymous.get("/v1/envs").status_code == 401


@pytest.mark.slow
@pytest.mark.parametrize("env_id", [LOCAL_ENV, INSTALLED_ENV])
def test_a_rest_job_trains_an_env_from_an_env_package(env_server: Server, env_id: str) -> None:
    with env_server.client() as alice:
        answer = submit(alice, OWN_ENV_SPEC.format(env=env_id))
        assert answer.status_code == 202, answer.text
        job = wait_for(alice, answer.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job
    assert job["result"]["final_eval_mean"] is not None
    packages = job["resolved"]["env_packages"]  # what the run imported, with versions
    if env_id == INSTALLED_ENV:
        assert f"{INSTALLED_MODULE} 0.1.0" in packages
    else:
        assert f"{LOCAL_MODULE} local module (no installed distribution)" in packages
    assert job["resolved"]["vectorization_reason"].startswith("auto: ")
    assert -0.5 <= job["result"]["final_eval_mean"] <= 1.0


@pytest.mark.slow
def test_an_env_that_raises_fails_the_job_with_its_own_exception(env_server: Server) -> None:
    """Under subproc vectorization the env's exception (type and message) is the job's error
    over REST and on the dashboard, never the pipe's EOFError, and no path of the server."""
    spec = OWN_ENV_SPEC.format(env=LOCAL_FAULTY_ENV).replace(
        "n_envs: 2}", "n_envs: 2, vectorization: subproc, kwargs: {jam_at: 25}}"
    )
    with env_server.client() as alice:
        answer = submit(alice, spec.replace("async: true", "async: false"))
        assert answer.status_code == 202, answer.text
        job = wait_for(alice, answer.json()["id"], timeout=300)
    assert job["status"] == "failed", job
    assert job["error"] == (
        f"ValveJammed: valve 7 stuck half-open after 25 steps (raised by {LOCAL_FAULTY_ENV} "
        "after 48 env steps)"
    )
    with env_server.client(owner=None) as browser:
        login = browser.post(
            "/login", data={"api_key": KEYS["alice"]}, headers={"Origin": env_server.url}
        )
        assert login.status_code == 303, login.text
        page = browser.get(f"/experiments/{job['id']}").text
    assert "ValveJammed: valve 7 stuck half-open after 25 steps" in page
    assert "Resolved at start: subproc envs" in page  # what the run resolved, on the dashboard


def test_module_colon_id_is_a_422_that_names_the_way_in(env_server: Server) -> None:
    with env_server.client() as alice:
        answer = submit(alice, OWN_ENV_SPEC.format(env=f"{LOCAL_MODULE}:{LOCAL_ENV}"))
    assert answer.status_code == 422
    issue = answer.json()["issues"][0]
    assert issue["path"] == "env.id"
    assert "PPO_PLATFORM_ENV_PACKAGES" in issue["fix"]


def test_a_service_without_the_package_refuses_its_env(
    server_factory: Callable[..., Server], tmp_path: Path
) -> None:
    plain = server_factory(tmp_path)
    try:
        with plain.client() as alice:
            answer = submit(alice, OWN_ENV_SPEC.format(env=LOCAL_ENV))
            listed = alice.get("/v1/envs", params={"contains": "corridor"}).json()
    finally:
        plain.kill(signal.SIGTERM)
    assert answer.status_code == 422
    assert "is not a registered gymnasium environment" in answer.json()["issues"][0]["message"]
    assert listed["env_ids"] == []
