"""A run's trained agent over REST: model.zip and vecnormalize.pkl to their owner only,
streamed, capped in size, and the downloaded model loads in plain stable-baselines3."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from tests.api_tests.conftest import Server, start_server, submit, wait_for
from tests.plain_sb3 import plain_sb3_actions

pytestmark = pytest.mark.slow  # one real training job behind every test

SPEC = (
    "name: agent\nenv: {id: CartPole-v1, n_envs: 2, normalize: {obs: true}}\n"
    "rollout: {n_steps: 64}\nupdate: {epochs: 2, minibatch_size: 64}\n"
    "policy: {net_arch: [16]}\nbudget: {total_timesteps: 256}\n"
    "evaluation: {every_timesteps: 0, episodes: 2, video: 1}\n"
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    server = start_server(tmp_path_factory.mktemp("model"))
    with server.client("alice") as alice:
        created = submit(alice, SPEC)
        assert created.status_code == 202, created.text
        job = wait_for(alice, created.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job
    yield server, job
    server.kill(signal.SIGTERM)


def final(server: Server, job: dict[str, Any], name: str) -> Path:
    return server.home / "runs" / job["mlflow_run_id"] / "final" / name


def streamed(client: httpx.Client, url: str) -> tuple[httpx.Response, bytes]:
    with client.stream("GET", url) as response:
        chunks = list(response.iter_bytes())
    return response, b"".join(chunks)


def test_owner_downloads_the_model_and_its_statistics(trained, tmp_path: Path) -> None:
    server, job = trained
    with server.client("alice") as alice:
        listed = {
            a["name"]: a
            for a in alice.get(f"/v1/experiments/{job['id']}/artifacts").json()["items"]
        }
        for name, media in (
            ("model.zip", "application/zip"),
            ("vecnormalize.pkl", "application/octet-stream"),
        ):
            url = f"/v1/experiments/{job['id']}/model/{name}"
            response, body = streamed(alice, url)
            assert response.status_code == 200
            assert response.headers["content-type"] == media
            assert body == final(server, job, name).read_bytes()
            assert int(response.headers["content-length"]) == len(body) == listed[name]["size"]
            assert listed[name]["url"] == url


def test_the_downloaded_model_loads_in_plain_sb3_and_acts_as_the_platform(
    trained, tmp_path: Path
) -> None:
    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from ppo_platform.trainers.ppo import PlatformPPO

    server, job = trained
    with server.client("alice") as alice:
        for name in ("model.zip", "vecnormalize.pkl"):
            (tmp_path / name).write_bytes(
                alice.get(f"/v1/experiments/{job['id']}/model/{name}").content
            )
    observations = np.random.default_rng(0).normal(0, 0.5, (32, 4)).astype(np.float32)
    stats = VecNormalize.load(
        str(final(server, job, "vecnormalize.pkl")), DummyVecEnv([lambda: gym.make("CartPole-v1")])
    )
    platform = PlatformPPO.load(final(server, job, "model.zip"), device="cpu")
    expected, _ = platform.predict(stats.normalize_obs(observations), deterministic=True)
    actions, seen = plain_sb3_actions(
        tmp_path / "model.zip",
        observations,
        normalize=tmp_path / "vecnormalize.pkl",
        workdir=tmp_path,
    )
    assert seen["project_modules"] == []
    np.testing.assert_array_equal(actions, expected)


def test_another_key_gets_404_for_the_model(trained) -> None:
    server, job = trained
    with server.client("bob") as bob:
        for name in ("model.zip", "vecnormalize.pkl"):
            response = bob.get(f"/v1/experiments/{job['id']}/model/{name}")
            assert response.status_code == 404
            assert response.json()["type"] == "NotFoundError"
            assert b"PK" not in response.content[:2]
        assert bob.get(f"/v1/experiments/{job['id']}/artifacts").status_code == 404


def test_only_the_two_model_files_can_be_named(trained) -> None:
    server, job = trained
    with server.client("alice") as alice:
        for name in ("spec.yaml", "..%2Fspec.yaml", "checkpoints", "model.zip.bak"):
            response = alice.get(f"/v1/experiments/{job['id']}/model/{name}")
            assert response.status_code in (404, 422), name
        traversal = alice.get(f"/v1/experiments/{job['id']}/artifacts/..%2Ffinal%2Fmodel.zip")
        assert traversal.status_code == 404


def test_the_dashboard_serves_the_model_to_its_owner_only(trained, keys) -> None:
    server, job = trained

    def session(owner: str) -> httpx.Client:
        client = httpx.Client(base_url=server.url, timeout=30)
        assert client.post("/login", data={"api_key": keys[owner]}).status_code == 303
        return client

    alice, bob = session("alice"), session("bob")
    try:
        page = alice.get(f"/experiments/{job['id']}").text
        url = f"/v1/experiments/{job['id']}/model/model.zip"
        assert f'href="{url}" download="model.zip"' in page
        response, body = streamed(alice, url)
        assert response.status_code == 200 and body == final(server, job, "model.zip").read_bytes()
        assert bob.get(url).status_code == 404
        video = f"/v1/experiments/{job['id']}/artifacts/evaluation-episode-1.mp4"
        assert f'<video controls preload="metadata" src="{video}">' in page
        response, body = streamed(alice, video)
        assert response.headers["content-type"] == "video/mp4" and body[4:8] == b"ftyp"
        assert bob.get(video).status_code == 404
    finally:
        alice.close()
        bob.close()


def test_a_file_over_the_download_limit_is_413(trained) -> None:
    server, job = trained
    size = final(server, job, "model.zip").stat().st_size
    server.kill(signal.SIGTERM)
    server.env_extra["PPO_PLATFORM_MAX_DOWNLOAD_BYTES"] = str(size - 1)
    try:
        server.start()
        with server.client("alice") as alice:
            response = alice.get(f"/v1/experiments/{job['id']}/model/model.zip")
            assert response.status_code == 413
            assert "PPO_PLATFORM_MAX_DOWNLOAD_BYTES" in response.json()["message"]
            assert (
                alice.get(f"/v1/experiments/{job['id']}/model/vecnormalize.pkl").status_code == 200
            )
    finally:  # the last test of the module: its server stops after it
        server.env_extra.pop("PPO_PLATFORM_MAX_DOWNLOAD_BYTES")
