"""Submit, list, read, cancel; a finished run's result, alerts, metrics, artifacts and events.

The module's server runs at most one experiment per key at a time (max_running 1), so a
second submission of the same key is reliably queued.
"""

from __future__ import annotations

import json
import time

import httpx
import pytest

pytestmark = pytest.mark.slow


def test_submit_is_202_with_links_and_idempotent(alice, post_spec, tiny) -> None:
    first = post_spec(alice, tiny(name="idem"), **{"Idempotency-Key": "retry-1"})
    assert first.status_code == 202, first.text
    body = first.json()
    assert body["status"] in ("queued", "running") and body["kind"] == "run"
    assert first.headers["Location"] == body["links"]["experiment"]
    # Where its time went in the server, phase by phase (ms), adding up to no more than all.
    phases = dict(
        (name, float(duration))
        for name, _, duration in (
            item.strip().partition(";dur=") for item in first.headers["Server-Timing"].split(",")
        )
    )
    order = ["body", "intake-wait", "validate", "store", "render", "answer", "total"]
    assert list(phases) == order and all(phases[name] >= 0 for name in order)
    assert phases["validate"] > 0 and phases["store"] > 0
    assert sum(phases[name] for name in order[:-1]) == pytest.approx(phases["total"], abs=0.05)
    again = post_spec(alice, tiny(name="idem"), **{"Idempotency-Key": "retry-1"})
    assert again.status_code == 200 and again.json()["id"] == body["id"]
    listed = alice.get("/v1/experiments", params={"limit": 100}).json()["items"]
    assert [j["name"] for j in listed].count("idem") == 1
    # POST, GET and the list answer the same moment, in UTC with its offset.
    read = alice.get(f"/v1/experiments/{body['id']}").json()
    from_list = next(j for j in listed if j["id"] == body["id"])
    assert body["created_at"] == read["created_at"] == from_list["created_at"]
    assert body["created_at"].endswith("+00:00")


def test_a_json_spec_is_read_like_yaml_and_malformed_ids_are_422(alice) -> None:
    spec = {"name": "as-json", "env": {"id": "CartPole-v1"}, "update": {"epochs": 31}}
    refused = alice.post("/v1/specs/validate", json=spec)
    assert refused.status_code == 422 and refused.json()["issues"][0]["path"] == "update.epochs"
    spec["update"]["epochs"] = 4
    valid = alice.post("/v1/specs/validate", json=spec)
    assert valid.status_code == 200, valid.text
    assert valid.json()["spec"]["update"]["epochs"] == 4
    assert valid.json()["spec"]["evaluation"]["async"] is False  # written as the spec is
    malformed = alice.get("/v1/experiments/not-an-id")
    assert malformed.status_code == 422 and malformed.json()["issues"][0]["path"].endswith("id")


def test_invalid_specs_are_refused_before_queueing(alice, post_spec) -> None:
    refused = post_spec(alice, "name: x\nenv: CartPole-v1\nupdate: {epochs: 31}\n")
    assert refused.status_code == 422 and refused.json()["issues"][0]["rule"]
    too_big = post_spec(alice, "name: x\nenv: CartPole-v1\nbudget: {total_timesteps: 900000000}\n")
    assert too_big.status_code == 422
    assert "max_env_steps" in too_big.json()["message"]
    tuple_obs = post_spec(alice, "name: x\nenv: Blackjack-v1\n")
    assert tuple_obs.status_code == 422, tuple_obs.text
    assert tuple_obs.json()["issues"][0]["path"] == "env.id"
    assert "Tuple observation space" in tuple_obs.json()["issues"][0]["message"]
    human = post_spec(alice, "name: x\nenv: {id: CartPole-v1, kwargs: {render_mode: human}}\n")
    assert human.status_code == 422 and human.json()["issues"][0]["path"].endswith("render_mode")
    names = [j["name"] for j in alice.get("/v1/experiments", params={"limit": 100}).json()["items"]]
    assert "x" not in names


def test_a_finished_run_reports_result_alerts_metrics_artifacts(
    alice, bob, post_spec, tiny, wait, server, keys
):
    alice_key = keys["alice"]  # for the dashboard page (`keys` below is the metric keys)
    job_id = post_spec(alice, tiny(1024, name="finished")).json()["id"]
    job = wait(alice, job_id)
    assert job["status"] == "succeeded", job["error"]
    assert job["result"]["timesteps"] == 1024 and job["result"]["final_eval_mean"] is not None
    assert job["mlflow_run_id"] == job["result"]["run_id"] and len(job["mlflow_run_id"]) == 32
    assert job["progress"]["timesteps"] == 1024 and job["diagnostics"]["approx_kl"] is not None
    alerts = alice.get(f"/v1/experiments/{job_id}/alerts").json()["items"]
    assert len(alerts) == job["alerts"] and all(a["kind"] == "alert" for a in alerts)
    keys = alice.get(f"/v1/experiments/{job_id}/metrics").json()
    assert keys["run_id"] == job["mlflow_run_id"]
    assert {"eval/mean_reward", "train/approx_kl"} <= set(keys["keys"])
    history = f"/v1/experiments/{job_id}/metrics/history"
    metrics = alice.get(history, params={"key": "eval/mean_reward"})
    assert metrics.status_code == 200, metrics.text
    assert [p["step"] for p in metrics.json()["points"]][-1] == 1024
    unknown = alice.get(history, params={"key": "eval/no_such_metric"})
    assert unknown.status_code == 404 and "eval/no_such_metric" in unknown.json()["message"]
    names = {a["name"] for a in alice.get(f"/v1/experiments/{job_id}/artifacts").json()["items"]}
    assert {"resolved_spec.yaml", "spec.yaml", "training_curves.png", "alerts.json"} <= names
    spec = alice.get(f"/v1/experiments/{job_id}/artifacts/resolved_spec.yaml")
    assert "total_timesteps: 1024" in spec.text
    png = alice.get(f"/v1/experiments/{job_id}/artifacts/training_curves.png")
    assert png.content.startswith(b"\x89PNG")
    for name in ("nope.yaml", "..%2Fjobs.db", "%2Fetc%2Fpasswd"):
        assert alice.get(f"/v1/experiments/{job_id}/artifacts/{name}").status_code == 404
    diagnosis = alice.get(f"/v1/experiments/{job_id}/diagnosis")
    assert diagnosis.status_code == 200, diagnosis.text
    assert set(diagnosis.json()) == {"causes", "not_judged", "thin_evidence"}
    assert all(c["cause"] and 0 <= c["confidence"] <= 1 for c in diagnosis.json()["causes"])
    assert bob.get(f"/v1/experiments/{job_id}/diagnosis").status_code == 404  # owner-scoped
    page = httpx.Client(base_url=server.url, timeout=30)
    assert page.post("/login", data={"api_key": alice_key}).status_code == 303
    html = page.get(f"/experiments/{job_id}").text
    assert '<h2 id="doctor-h">Doctor</h2>' in html
    causes = diagnosis.json()["causes"]
    assert ("No cause found" in html) == (not causes)
    assert all(f'<strong class="mono">{c["cause"]}</strong>' in html for c in causes)


def test_a_run_too_short_to_judge_says_not_judged_on_its_page(
    alice, post_spec, tiny, wait, server, keys
) -> None:
    job_id = post_spec(alice, tiny(128, name="thin")).json()["id"]  # 2 updates of 64 steps
    assert wait(alice, job_id)["status"] == "succeeded"
    diagnosis = alice.get(f"/v1/experiments/{job_id}/diagnosis").json()
    assert diagnosis["causes"] == []
    assert diagnosis["thin_evidence"].startswith("the run logged 2 update(s); a cause is judged")
    page = httpx.Client(base_url=server.url, timeout=30)
    assert page.post("/login", data={"api_key": keys["alice"]}).status_code == 303
    html = page.get(f"/experiments/{job_id}").text
    assert f'<p id="thin-evidence">Not judged: {diagnosis["thin_evidence"]}</p>' in html
    assert "No cause found" not in html


def _sse(client: httpx.Client, job_id: str, last: int | None = None, count: int | None = None):
    headers = {"Last-Event-ID": str(last)} if last is not None else {}
    events = []
    with client.stream("GET", f"/v1/experiments/{job_id}/events", headers=headers) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        current: dict[str, str] = {}
        for line in stream.iter_lines():
            if line.startswith(("id:", "event:", "data:")):
                name, _, value = line.partition(": ")
                current[name.rstrip(":")] = value
            elif not line and current:
                events.append(current)
                current = {}
                if count is not None and len(events) == count:
                    break  # disconnect mid-stream
    return events


def test_sse_reconnect_with_last_event_id_misses_nothing(alice, post_spec, tiny, wait) -> None:
    job_id = post_spec(alice, tiny(2048, name="stream")).json()["id"]
    first = _sse(alice, job_id, count=3)  # while it runs (or is queued), then hang up
    rest = _sse(alice, job_id, last=int(first[-1]["id"]))
    events = first + rest
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(set(ids))  # strictly increasing, nothing twice
    assert json.loads(events[-1]["data"])["data"]["status"] == "succeeded"
    assert ids == [int(e["id"]) for e in _sse(alice, job_id)]  # the same as one full read
    assert {"status", "progress", "eval"} <= {e["event"] for e in events}
    assert wait(alice, job_id)["status"] == "succeeded"


def test_cancel_a_queued_one_never_starts_and_a_running_one_stops(alice, post_spec, tiny, wait):
    running = post_spec(alice, tiny(400_000, name="long")).json()["id"]
    queued = post_spec(alice, tiny(name="waiting")).json()["id"]
    wait(alice, running, lambda j: j["progress"].get("timesteps", 0) > 0, timeout=90)
    assert alice.get(f"/v1/experiments/{queued}").json()["status"] == "queued"
    cancelled = alice.post(f"/v1/experiments/{queued}/cancel")
    assert cancelled.status_code == 202 and cancelled.json()["status"] == "cancelled"
    asked = time.monotonic()
    assert alice.post(f"/v1/experiments/{running}/cancel").json()["cancel_requested"]
    stopped = wait(alice, running, timeout=30)
    assert stopped["status"] == "cancelled" and time.monotonic() - asked < 10
    time.sleep(1.0)
    never = alice.get(f"/v1/experiments/{queued}").json()
    assert never["status"] == "cancelled" and never["started_at"] is None
    assert never["attempts"] == 0
    assert alice.post(f"/v1/experiments/{running}/cancel").status_code == 202  # no-op
    listed = alice.get("/v1/experiments", params={"status": "cancelled"}).json()["items"]
    assert {j["status"] for j in listed} == {"cancelled"}


def test_list_filters_and_pages_with_a_cursor(bob, post_spec, tiny) -> None:
    ids = [post_spec(bob, tiny(name=f"page{i}")).json()["id"] for i in range(3)]
    for job_id in ids:
        bob.post(f"/v1/experiments/{job_id}/cancel")
    seen, cursor = [], None
    while True:
        params = {"limit": 2, "kind": "run", **({"cursor": cursor} if cursor else {})}
        page = bob.get("/v1/experiments", params=params).json()
        seen += [j["id"] for j in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen[:3] == ids[::-1]
    assert bob.get("/v1/experiments", params={"status": "bogus"}).status_code == 422
    assert bob.get("/v1/experiments", params={"kind": "tune"}).json()["items"] == []


def test_a_status_read_sees_a_committed_change_at_once(alice, post_spec, tiny) -> None:
    # The status route answers from memory while the row is unchanged; never after a commit.
    job_id = post_spec(alice, tiny(name="fresh")).json()["id"]
    assert alice.get(f"/v1/experiments/{job_id}").json()["cancel_requested"] is False  # held
    cancelled = alice.post(f"/v1/experiments/{job_id}/cancel").json()
    now = alice.get(f"/v1/experiments/{job_id}").json()
    assert now["cancel_requested"] is True and cancelled["cancel_requested"] is True
    assert now["status"] == cancelled["status"] or now["status"] in ("cancelled", "succeeded")


def test_the_resolved_spec_is_listed_with_the_size_of_its_download(alice, post_spec, tiny) -> None:
    """Every listed artifact has its real size: resolved_spec.yaml too (it is made on request)."""
    job_id = post_spec(alice, tiny(256, name="sized")).json()["id"]
    listed = alice.get(f"/v1/experiments/{job_id}/artifacts").json()["items"]
    [spec] = [item for item in listed if item["name"] == "resolved_spec.yaml"]
    downloaded = alice.get(spec["url"])
    assert downloaded.status_code == 200
    assert spec["size"] == len(downloaded.content) > 0
