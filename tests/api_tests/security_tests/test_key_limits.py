"""Findings 7 and 8: per-key write rate (429 with Retry-After), a bounded intake queue, a cap
on each key's open event streams, and a dispatcher that takes turns between keys, never
letting one key hold every slot."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

VALID = "name: fine\nenv: CartPole-v1\n"
YAML = {"Content-Type": "application/yaml"}


def _validate(client: httpx.Client) -> httpx.Response:
    return client.post("/v1/specs/validate", content=VALID, headers=YAML)


@pytest.mark.slow
def test_a_key_over_its_write_rate_gets_429_with_retry_after_and_others_do_not(
    server_factory, tmp_path
) -> None:
    server = server_factory(
        tmp_path, PPO_PLATFORM_KEY_REQUESTS_PER_SECOND="0.5", PPO_PLATFORM_KEY_REQUEST_BURST="3"
    )
    try:
        with server.client("alice") as alice, server.client("bob") as bob:
            answers = [_validate(alice) for _ in range(5)]
            assert [a.status_code for a in answers[:3]] == [200] * 3
            limited = answers[-1]
            assert limited.status_code == 429 and limited.json()["type"] == "LimitError"
            assert 1 <= int(limited.headers["Retry-After"]) <= 2
            assert _validate(bob).status_code == 200  # another key's bucket is its own
            assert alice.get("/v1/experiments").status_code == 200  # reads are not charged
            time.sleep(int(limited.headers["Retry-After"]))
            assert _validate(alice).status_code == 200
    finally:
        server.kill()


def test_the_intake_queue_is_bounded(server_factory, tmp_path) -> None:
    server = server_factory(
        tmp_path,
        PPO_PLATFORM_INTAKE_QUEUE="1",
        PPO_PLATFORM_KEY_REQUEST_BURST="1000",
        PPO_PLATFORM_KEY_REQUESTS_PER_SECOND="1000",
    )
    try:
        with server.client("alice") as alice, ThreadPoolExecutor(12) as pool:
            answers = list(pool.map(lambda _: _validate(alice), range(36)))
        statuses = {a.status_code for a in answers}
        assert statuses == {200, 429}, statuses
        busy = next(a for a in answers if a.status_code == 429)
        assert "PPO_PLATFORM_INTAKE_QUEUE" in busy.json()["message"]
        assert busy.headers["Retry-After"] == "1"
    finally:
        server.kill()


def test_a_key_may_hold_only_so_many_event_streams(server_factory, tmp_path, tiny) -> None:
    server = server_factory(tmp_path, PPO_PLATFORM_MAX_STREAMS="2")
    try:
        with server.client("alice") as alice, server.client("bob") as bob:
            # Streams on a job that cannot end during the test: queued behind alice's running
            # one (one running job per key on test servers), both cancelled at the end.
            runner = alice.post("/v1/experiments", content=tiny(steps=100_000), headers=YAML)
            assert runner.status_code == 202, runner.text
            deadline = time.monotonic() + 60
            while _status(alice, runner.json()["id"]) != "running":
                assert time.monotonic() < deadline, _status(alice, runner.json()["id"])
                time.sleep(0.2)
            job = alice.post("/v1/experiments", content=tiny(steps=64), headers=YAML).json()
            assert _status(alice, job["id"]) == "queued"
            route = f"/v1/experiments/{job['id']}/events"
            # Keep the context managers: a discarded one is collected and closes its stream.
            first_cm, second_cm = alice.stream("GET", route), alice.stream("GET", route)
            first, second = first_cm.__enter__(), second_cm.__enter__()
            assert (first.status_code, second.status_code) == (200, 200)
            third = alice.get(route)
            assert third.status_code == 429, (third.status_code, third.text[:300])
            assert third.headers["Retry-After"] == "5"
            bob_job = bob.post("/v1/experiments", content=tiny(steps=64), headers=YAML).json()
            with bob.stream("GET", f"/v1/experiments/{bob_job['id']}/events") as bobs:
                assert bobs.status_code == 200  # another key's streams are its own
            first_cm.__exit__(None, None, None)
            deadline = time.monotonic() + 60  # a loaded machine notices the disconnect late
            while True:  # the slot frees once the server sees the stream gone
                with alice.stream("GET", route) as again:
                    if again.status_code == 200:
                        break
                assert time.monotonic() < deadline, "a closed stream kept its slot"
                time.sleep(0.5)
            second_cm.__exit__(None, None, None)
            for queued in (job["id"], runner.json()["id"]):
                alice.post(f"/v1/experiments/{queued}/cancel")
    finally:
        server.kill()


def _status(client: httpx.Client, job_id: str) -> str:
    return str(client.get(f"/v1/experiments/{job_id}").json()["status"])


@pytest.mark.slow
def test_one_key_never_holds_every_slot_and_keys_take_turns(server_factory, tmp_path, tiny) -> None:
    # Two slots, the default per-key cap (one fewer than the slots): alice's queue of three
    # leaves a slot that bob's later submission takes at once. Alice's budgets outlast the
    # test (each is cancelled), so none ends and lets the next of hers start meanwhile.
    server = server_factory(tmp_path, PPO_PLATFORM_MAX_RUNNING="")
    try:
        with server.client("alice") as alice, server.client("bob") as bob:
            alices = [
                alice.post(
                    "/v1/experiments", content=tiny(steps=1_000_000, name=f"a{i}"), headers=YAML
                ).json()["id"]
                for i in range(3)
            ]
            deadline = time.monotonic() + 120
            while _status(alice, alices[0]) != "running":
                assert time.monotonic() < deadline
                time.sleep(0.25)
            time.sleep(1.5)  # several dispatcher ticks: a second of alice's would start now
            assert [_status(alice, j) for j in alices[1:]] == ["queued", "queued"]
            bobs = bob.post("/v1/experiments", content=tiny(steps=64), headers=YAML).json()["id"]
            while _status(bob, bobs) == "queued":
                assert time.monotonic() < deadline, "bob's job waited behind alice's queue"
                time.sleep(0.25)
            assert _status(alice, alices[2]) == "queued"
            for job_id in alices:
                alice.post(f"/v1/experiments/{job_id}/cancel")
    finally:
        server.kill()


@pytest.mark.slow
def test_jobs_start_only_while_their_memory_fits_beside_the_running_ones(
    server_factory, tmp_path, tiny
) -> None:
    # Each tiny run is estimated at a little over 400 MiB: one fits a 600 MiB budget, two not.
    server = server_factory(
        tmp_path, PPO_PLATFORM_MEMORY_BUDGET_BYTES=str(600 * 2**20), PPO_PLATFORM_MAX_RUNNING="2"
    )
    try:
        with server.client("alice") as alice:
            first, second = (
                alice.post(
                    "/v1/experiments", content=tiny(steps=1024, name=n), headers=YAML
                ).json()["id"]
                for n in ("m1", "m2")
            )
            deadline = time.monotonic() + 300
            pairs = set()  # (first's status, second's status) as polled
            while True:
                pair = (_status(alice, first), _status(alice, second))
                pairs.add(pair)
                if pair[1] in ("succeeded", "failed"):
                    break
                assert time.monotonic() < deadline, pairs
                time.sleep(0.2)
            assert ("running", "running") not in pairs, pairs  # never both at once
            assert ("running", "queued") in pairs, pairs  # the second waited for memory
            assert _status(alice, second) == "succeeded"  # and ran once the first ended
    finally:
        server.kill()


def test_a_key_may_queue_only_so_many_experiments(server_factory, tmp_path, tiny, wait) -> None:
    # Two queued per key: alice's third waiting submission is a 429; bob's queue is his own.
    # Her first is running before the others go in (one running job per key), so exactly
    # two wait whatever the dispatcher's timing; a long budget keeps it running until cancel.
    server = server_factory(tmp_path, PPO_PLATFORM_MAX_QUEUED="2")
    try:
        with server.client("alice") as alice, server.client("bob") as bob:

            def queue(i: int) -> httpx.Response:
                spec = tiny(steps=1_000_000, name=f"q{i}")
                return alice.post("/v1/experiments", content=spec, headers=YAML)

            answers = [queue(0)]
            wait(alice, answers[0].json()["id"], lambda job: job["status"] == "running")
            answers += [queue(i) for i in (1, 2, 3)]
            statuses = [a.status_code for a in answers]
            assert statuses == [202, 202, 202, 429], statuses
            refused = answers[-1].json()
            assert refused["type"] == "LimitError" and "max_queued" in refused["message"]
            assert (
                bob.post("/v1/experiments", content=tiny(steps=64), headers=YAML).status_code == 202
            )
            for answer in answers[:3]:
                alice.post(f"/v1/experiments/{answer.json()['id']}/cancel")
    finally:
        server.kill()
