"""A batch of seeds (`budget.seeds`) submitted over HTTP: one experiment of kind `seeds`, every
seed a run under one parent, every seed's env steps counted against the key's limits."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

BATCH = """name: rest-batch
env: {id: CartPole-v1, n_envs: 2}
compiled: 'on'
rollout: {n_steps: 32}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 512, seeds: '3,1'}
evaluation: {every_timesteps: 256, episodes: 2}
checkpoints: {every_timesteps: 0}
"""


def test_a_batch_trains_each_seed_under_one_parent_and_compares(alice, bob, post_spec, wait):
    submitted = post_spec(alice, BATCH)
    assert submitted.status_code == 202, submitted.text
    body = submitted.json()
    assert body["kind"] == "seeds" and body["total_timesteps"] == 2 * 512
    job = wait(alice, body["id"], timeout=240)
    assert job["status"] == "succeeded", job["error"]
    result = job["result"]
    assert sorted(r["name"] for r in result["runs"]) == ["rest-batch-s1", "rest-batch-s3"]
    assert result["failed"] == 0 and job["mlflow_run_id"] == result["parent_run_id"]
    assert sorted(job["mlflow_run_ids"]) == sorted(r["run_id"] for r in result["runs"])
    assert job["progress"] == {"timesteps": 1024, "total_timesteps": 1024}
    events = alice.get(f"/v1/experiments/{job['id']}/events").text
    assert '"seed":3' in events.replace(" ", "") and '"seed":1' in events.replace(" ", "")
    compared = alice.get("/v1/comparisons", params={"experiment": job["id"]})
    assert compared.status_code == 200, compared.text
    assert [g["n"] for g in compared.json()["groups"]] == [2]  # one config, two seeds
    assert bob.get(f"/v1/experiments/{job['id']}").status_code == 404


def test_a_batch_over_the_step_limit_is_refused_counting_every_seed(alice, post_spec):
    # One seed of it is well inside max_env_steps (5M); 64 seeds are not.
    batch = "name: big\nenv: CartPole-v1\nbudget: {total_timesteps: 100352, seeds: '0-63'}\n"
    refused = post_spec(alice, batch)
    assert refused.status_code == 422, refused.text
    issue = refused.json()["issues"][0]
    assert issue["path"] == "budget.total_timesteps" and issue["rule"] == "max_env_steps"
    assert f"{64 * 100352} env steps" in issue["message"]


def test_bad_budget_seeds_are_refused_naming_the_field(alice, post_spec):
    refused = post_spec(alice, BATCH.replace("'3,1'", "'3,3'"))
    assert refused.status_code == 422, refused.text
    issue = refused.json()["issues"][0]
    assert issue["path"] == "budget.seeds" and "more than once" in issue["message"]


def test_compiled_on_where_it_cannot_run_is_refused_at_submission(alice, post_spec):
    """A run, a batch or a sweep asking compiled: on that the compiled path cannot train is
    bad input (422 naming `compiled` and why), not a job that fails once it starts."""
    pendulum = BATCH.replace("CartPole-v1", "Pendulum-v1")
    sweep = (
        BATCH.replace(
            "budget: {total_timesteps: 512, seeds: '3,1'}", "budget: {total_timesteps: 512}"
        )
        + "sweep: {grid: {surrogate.target_kl: [null, 0.02]}, seeds: [0, 1]}\n"
    )
    listed = {"limit": 100}
    before = alice.get("/v1/experiments", params=listed).json()["items"]
    for text, where in [
        (pendulum, "env Pendulum-v1 has no JAX port"),
        (pendulum.replace("seeds: '3,1'", "seed: 3"), "env Pendulum-v1 has no JAX port"),
        (sweep, "at grid point surrogate.target_kl=0.02: surrogate.target_kl (early stopping)."),
    ]:
        refused = post_spec(alice, text)
        assert refused.status_code == 422, refused.text
        [issue] = refused.json()["issues"]
        assert issue["path"] == "compiled" and issue["value"] == "on"
        assert where in issue["message"] and "compiled: auto" in issue["fix"]
    assert alice.get("/v1/experiments", params=listed).json()["items"] == before  # none queued
