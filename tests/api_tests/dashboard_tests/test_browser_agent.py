"""In Chromium: a finished run's page offers its trained model and plays its evaluation video
(same-origin media under the page's security policy), with no console error."""

from __future__ import annotations

import pytest

from tests.api_tests.conftest import submit, wait_for

pytestmark = pytest.mark.slow

FILMED = """name: dashboard-filmed
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 0, episodes: 2, video: 1}
"""
VIDEO_STATE = """() => {
  const video = document.querySelector('video');
  return [video.readyState, video.duration, video.videoWidth];
}"""


def test_the_run_page_plays_its_video_and_offers_its_model(tab_factory, server, keys) -> None:
    with server.client("alice") as alice:
        created = submit(alice, FILMED)
        assert created.status_code == 202, created.text
        job = wait_for(alice, created.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go(f"/experiments/{job['id']}")
    page = tab.page
    with page.expect_download() as download:
        page.locator("#download-model-zip").click()
    assert download.value.suggested_filename == "model.zip"
    page.wait_for_function("() => document.querySelector('video').readyState >= 1", timeout=30_000)
    ready, duration, width = page.evaluate(VIDEO_STATE)
    assert ready >= 1 and duration > 0 and width == 600
    assert tab.errors == []
