"""What a study can sample is checked as a spec is, against a real server with two keys: no
value of a search space reaches a file or model outside the LM folder, refusals say nothing of
what lies there, reward patterns cannot backtrack without bound, and no answer names the
server's folders."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from ppo_platform.settings import Settings
from ppo_platform.training.lm_demo import DEMO_FOLDER, init_demo
from tests.api_tests.conftest import Server, start_server, submit, wait_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"


@pytest.fixture(scope="module")
def lm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("study_paths")
    init_demo(Settings(home=tmp / "home"), sft_steps=10)
    outside = tmp / "elsewhere"  # beside the server's home: never reachable from a spec
    outside.mkdir()
    lm_folder = tmp / "home" / "lm" / DEMO_FOLDER
    shutil.copytree(lm_folder / "sft", outside / "model")  # a valid model, in the wrong place
    (outside / "held_out.jsonl").write_text(
        (lm_folder / "heldout.jsonl").read_text(), encoding="utf-8"
    )
    (outside / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
    (outside / "notes.jsonl").write_text("these are notes, not JSON lines\n")
    for name in ("held_out.jsonl", "binary.jsonl", "notes.jsonl", "missing.jsonl"):
        (lm_folder / f"link-{name}").symlink_to(outside / name)
    running = start_server(tmp)
    yield running
    running.kill(signal.SIGTERM)


def lm_spec(**changes: object) -> str:
    data = yaml.safe_load(SPEC.read_text())
    data["budget"]["updates"] = 2
    data["evaluation"].update(every_updates=1, max_prompts=8)
    data["lm"]["prompts_per_update"] = 4
    data["update"]["minibatch_size"] = 4
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value
    return yaml.safe_dump(data)


def study(path: str, choices: list[object]) -> dict[str, object]:
    return {
        "n_trials": 2,
        "sampler": {"type": "grid"},
        "pruner": {"type": "none"},
        "space": {path: {"type": "categorical", "choices": choices}},
    }


def validated_and_submitted(client: httpx.Client, text: str) -> list[httpx.Response]:
    checked = client.post(
        "/v1/specs/validate", content=text, headers={"Content-Type": "application/yaml"}
    )
    return [checked, submit(client, text)]


def home_of(server: Server) -> Path:
    return server.home.parent  # the folder the server's home, LM folder and outside files share


@pytest.mark.parametrize(
    ("field", "inside", "outside"),
    [
        ("lm.eval_prompts.path", "arithmetic/heldout.jsonl", "{outside}/held_out.jsonl"),
        ("lm.eval_prompts.path", "arithmetic/heldout.jsonl", "arithmetic/link-held_out.jsonl"),
        (
            "lm.eval_prompts.path",
            "arithmetic/heldout.jsonl",
            "arithmetic/../../../elsewhere/n.jsonl",
        ),
        ("lm.model.reference", "arithmetic/sft", "{outside}/model"),
        ("lm.model.reference", "arithmetic/sft", "~/model"),
    ],
)
def test_a_study_sampling_an_lm_path_outside_the_lm_folder_is_refused_at_validation_and_submission(
    lm_server, field, inside, outside
):
    outside = outside.format(outside=home_of(lm_server) / "elsewhere")
    text = lm_spec(tune=study(field, [inside, outside]))
    with lm_server.client("bob") as bob:
        before = len(bob.get("/v1/experiments").json()["items"])
        for response in validated_and_submitted(bob, text):
            assert response.status_code == 422, response.text
            (issue,) = response.json()["issues"]
            assert issue["path"] == f"tune.space.{field}.choices[1]"
            assert "LM folder" in issue["message"]
        assert len(bob.get("/v1/experiments").json()["items"]) == before  # nothing queued


def test_refusals_of_outside_files_say_nothing_of_what_lies_there(lm_server):
    elsewhere = home_of(lm_server) / "elsewhere"
    answers = {}
    with lm_server.client("alice") as alice:
        for name in ("held_out", "binary", "notes", "missing"):
            for value in (f"{elsewhere}/{name}.jsonl", f"arithmetic/link-{name}.jsonl"):
                text = lm_spec(
                    tune=study("lm.eval_prompts.path", ["arithmetic/heldout.jsonl", value])
                )
                response = submit(alice, text)
                assert response.status_code == 422, response.text
                issue = response.json()["issues"][0]
                assert issue["value"] == value
                answers[value] = (issue["message"].replace(value, "VALUE"), issue["fix"])
    by_kind = {kind: {answers[v] for v in answers if v.startswith(kind)} for kind in ("/", "a")}
    # One answer for every absolute path, one for every link leading out: whether the file is
    # there, binary, not JSONL or fine is never told.
    assert len(by_kind["/"]) == 1 and len(by_kind["a"]) == 1, answers
    for message, _ in answers.values():
        for tell in ("UTF-8", "JSON", "not a file", "no prompts", str(elsewhere)):
            assert tell not in message


def test_a_reward_pattern_that_could_backtrack_is_refused_and_one_re2_runs_is_taken(lm_server):
    with lm_server.client("alice") as alice:
        refused = validated_and_submitted(
            alice, lm_spec(lm__rewards=[{"name": "regex", "params": {"pattern": r"(\d)=\1"}}])
        )
        taken = alice.post(
            "/v1/specs/validate",
            content=lm_spec(lm__rewards=[{"name": "regex", "params": {"pattern": r"^(7|77)+$"}}]),
            headers={"Content-Type": "application/yaml"},
        )
    for response in refused:
        assert response.status_code == 422, response.text
        assert "RE2" in response.text and "lm.rewards" in response.text
    assert taken.status_code == 200, taken.text


@pytest.mark.slow
def test_no_answer_names_the_server_home_folder(lm_server):
    """Errors, plans, summaries, events and pages, for a tenant's requests."""
    secret = str(home_of(lm_server))
    bodies: list[str] = []
    with lm_server.client("alice") as alice:
        bodies += [
            r.text
            for r in validated_and_submitted(
                alice, lm_spec(lm__eval_prompts={"path": "arithmetic/absent.jsonl"})
            )
        ]
        bodies += [
            r.text for r in validated_and_submitted(alice, lm_spec(lm__model__policy="nowhere"))
        ]
        plan = {"use_case": "rlhf", "model_dir": "arithmetic/sft", "budget": 64}
        for prompts in ("arithmetic/train.jsonl", "arithmetic/absent.jsonl"):
            bodies.append(alice.post("/v1/plans", json={**plan, "prompts": prompts}).text)
        job = submit(alice, lm_spec(tune=study("lm.kl.beta", [0.01, 0.1])))
        assert job.status_code == 202, job.text
        done = wait_for(alice, job.json()["id"], timeout=600)
        assert done["status"] == "succeeded", done["error"]
        job_id = done["id"]
        for route in ("", "/events", "/artifacts", "/artifacts/summary.json"):
            bodies.append(alice.get(f"/v1/experiments/{job_id}{route}").text)
        summary = alice.get(f"/v1/experiments/{job_id}/artifacts/summary.json").json()
        assert summary["storage"] == "a journal file"
    with httpx.Client(base_url=lm_server.url, timeout=30) as page:
        assert page.post("/login", data={"api_key": "key-alice-0123456789"}).status_code == 303
        bodies.append(page.get(f"/experiments/{job_id}").text)
        assert "tracking store, a SQLite file" in bodies[-1]
    assert len(bodies) == 11
    for body in bodies:
        assert secret not in body, body[:2000]
