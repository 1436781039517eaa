"""Sweeps and studies submitted over HTTP run in the job service like runs do."""

from __future__ import annotations

import json

import httpx
import pytest

pytestmark = pytest.mark.slow

SWEEP = """name: tiny-sweep
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 256, episodes: 2}
sweep: {grid: {update.epochs: [1, 2]}, seeds: [0]}
"""


def test_a_sweep_job_trains_every_member_under_one_parent_run(alice, bob, post_spec, wait) -> None:
    submitted = post_spec(alice, SWEEP)
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["kind"] == "sweep" and submitted.json()["total_timesteps"] == 512
    job = wait(alice, submitted.json()["id"], timeout=240)
    assert job["status"] == "succeeded", job["error"]
    result = job["result"]
    assert len(result["runs"]) == 2 and result["failed"] == 0
    assert job["mlflow_run_id"] == result["parent_run_id"]
    assert sorted(job["mlflow_run_ids"]) == sorted(r["run_id"] for r in result["runs"])
    assert job["progress"] == {"runs_done": 2, "runs_total": 2}
    events = alice.get(f"/v1/experiments/{job['id']}/events").text
    assert events.count("event: member\n") == 2, events[:500]
    logs = alice.get(f"/v1/experiments/{job['id']}/artifacts").json()["items"]
    assert any(a["name"].endswith(".md") for a in logs)
    compared = alice.get("/v1/comparisons", params={"experiment": job["id"]})
    assert compared.status_code == 200, compared.text
    body = compared.json()
    assert [(g["name"], g["n"]) for g in body["groups"]] == [
        ("update.epochs=1", 1),
        ("update.epochs=2", 1),
    ]
    assert body["pairs"][0]["verdict"] == "indistinguishable"  # one seed each: no verdict
    assert len(body["warnings"]) == 2
    assert bob.get("/v1/comparisons", params={"experiment": job["id"]}).status_code == 404
    report = alice.get(f"/v1/experiments/{job['id']}/artifacts/report.md").text
    assert "## Variants compared" in report  # what the sweep page shows


TUNE = """name: tiny-tune
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 256, episodes: 2}
tune:
  n_trials: 2
  seeds_per_trial: 1
  sampler: {type: random, seed: 0}
  space:
    update.epochs: {type: int, low: 1, high: 3}
"""


def test_a_tune_job_reports_the_best_value_and_spec(alice, post_spec, wait) -> None:
    submitted = post_spec(alice, TUNE)
    assert submitted.status_code == 202, submitted.text
    assert submitted.json()["kind"] == "tune"
    job = wait(alice, submitted.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job["error"]
    result = job["result"]
    assert job["mlflow_run_id"] == result["parent_run_id"]
    assert isinstance(result["best_value"], float) and result["best_trial"] in (0, 1)
    assert "tune:" not in result["best_spec"] and "epochs:" in result["best_spec"]
    progress = job["progress"]
    assert (progress["trials_done"], progress["trials_total"]) == (2, 2)
    assert progress["best_value"] == result["best_value"]
    events = alice.get(f"/v1/experiments/{job['id']}/events")
    assert "trials_done" in events.text, events.text[:500]
    assert events.text.count("event: trial\n") == 2, events.text[:500]
    names = {a["name"] for a in alice.get(f"/v1/experiments/{job['id']}/artifacts").json()["items"]}
    assert "best_spec.yaml" in names
    assert (
        alice.get(f"/v1/experiments/{job['id']}/artifacts/best_spec.yaml").text
        == (result["best_spec"])
    )


def test_a_tune_job_with_held_out_verification_reports_it(
    alice, post_spec, wait, server, keys
) -> None:
    submitted = post_spec(alice, TUNE + "  verify: {seeds: [5, 6], top_trials: 1, episodes: 2}\n")
    assert submitted.status_code == 202, submitted.text
    job = wait(alice, submitted.json()["id"], timeout=300)
    assert job["status"] == "succeeded", job["error"]
    summary = alice.get(f"/v1/experiments/{job['id']}/artifacts/summary.json").json()
    (verified,) = summary["verification"]
    assert verified["seeds"] == [5, 6] and len(verified["seed_values"]) == 2
    assert summary["best_chosen_by"] == "held_out"
    assert job["result"]["best_trial"] == verified["number"] == summary["best_trial"]
    assert job["result"]["best_value"] == verified["held_out_value"]
    frames = alice.get(f"/v1/experiments/{job['id']}/events").text.split("\n\n")
    verify = [
        json.loads(frame.split("\ndata: ", 1)[1])
        for frame in frames
        if "\nevent: verify\n" in f"\n{frame}"
    ]
    assert [(e["kind"], e["data"]["stage"]) for e in verify] == [
        ("verify", "started"),
        ("verify", "trial"),
    ]
    assert verify[0]["data"]["seeds"] == [5, 6]
    assert verify[0]["data"]["trials"] == [verified["number"]]
    assert verify[1]["data"]["number"] == verified["number"]
    assert verify[1]["data"]["held_out_value"] == verified["held_out_value"]
    assert verify[1]["data"]["run_id"] == verified["run_id"]
    with httpx.Client(base_url=server.url, timeout=30) as browser:  # the study page shows it
        assert browser.post("/login", data={"api_key": keys["alice"]}).status_code == 303
        page = browser.get(f"/experiments/{job['id']}").text
    assert 'id="verified"' in page and f"<tr><td>{verified['number']}</td>" in page
    assert 'id="comparison"' in page and f"verify-trial-{verified['number']}" in page
