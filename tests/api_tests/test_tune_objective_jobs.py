"""A study job over HTTP with the new objectives: a two-objective study writes its Pareto front,
the study page shows it; a contradicting objective is refused before a job exists."""

from __future__ import annotations

import httpx
import pytest

TUNE = """name: pareto-job
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 128, episodes: 2}
tune:
  objective: {type: return_and_steps, threshold: 0.5}
  n_trials: 2
  sampler: {type: random, seed: 0}
  space:
    update.epochs: {type: int, low: 1, high: 3}
"""


def test_a_contradicting_objective_is_refused_naming_the_field(alice, post_spec) -> None:
    refused = post_spec(
        alice, TUNE.replace("  n_trials: 2", "  n_trials: 2\n  direction: minimize")
    )
    assert refused.status_code == 422, refused.text
    assert "tune.direction" in refused.text and "remove tune.direction" in refused.text


@pytest.mark.slow
def test_a_two_objective_study_job_writes_and_shows_its_pareto_front(
    alice, post_spec, wait, server, keys
) -> None:
    submitted = post_spec(alice, TUNE)
    assert submitted.status_code == 202, submitted.text
    job = wait(alice, submitted.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job["error"]
    summary = alice.get(f"/v1/experiments/{job['id']}/artifacts/summary.json").json()
    front = summary["pareto_front"]
    assert front and summary["directions"] == ["maximize", "minimize"]
    assert summary["pruning"] == "off (multi-objective)"
    assert job["result"]["best_trial"] == front[0]["number"] == summary["best_trial"]
    assert (job["progress"]["trials_done"], job["progress"]["trials_total"]) == (2, 2)
    with httpx.Client(base_url=server.url, timeout=30) as browser:
        assert browser.post("/login", data={"api_key": keys["alice"]}).status_code == 303
        page = browser.get(f"/experiments/{job['id']}").text
    assert 'id="pareto"' in page and "Env steps to threshold" in page
    assert page.count("<tr><td>") >= len(front) + 2  # front rows and trial rows
