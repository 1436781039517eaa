"""An `algorithm: ppo_lm` spec submitted to the real HTTP server runs as a job; paths from
outside stay inside the operator's LM folder, and the refusal rules answer 422."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import httpx
import pytest
import yaml

from ppo_platform.settings import Settings
from ppo_platform.training.lm_demo import init_demo
from tests.api_tests.conftest import KEYS, Server, start_server, submit, wait_for

os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[2] / "specs" / "lm_arithmetic.yaml"


def short_spec(**changes: object) -> str:
    data = yaml.safe_load(SPEC.read_text())
    data["budget"]["updates"] = 3
    data["evaluation"].update(every_updates=2, max_prompts=16)
    data["lm"]["prompts_per_update"] = 8
    data["update"]["minibatch_size"] = 4
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return yaml.safe_dump(data)


def tune_section(space: dict[str, list[object]], n_trials: int = 2) -> dict[str, object]:
    return {
        "n_trials": n_trials,
        "sampler": {"type": "random", "seed": 0},
        "pruner": {"type": "none"},
        "space": {path: {"type": "categorical", "choices": c} for path, c in space.items()},
    }


@pytest.fixture(scope="module")
def lm_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("lm_api")
    init_demo(Settings(home=tmp / "home"), sft_steps=10)
    running = start_server(tmp)
    yield running
    running.kill(signal.SIGTERM)


@pytest.mark.slow
def test_an_lm_spec_runs_as_a_job(lm_server):
    with lm_server.client("alice") as alice:
        response = submit(alice, short_spec())
        assert response.status_code == 202, response.text
        job = wait_for(alice, response.json()["id"], timeout=600)
        assert job["status"] == "succeeded", job["error"]
        assert job["result"]["timesteps"] == 3 and len(job["mlflow_run_id"]) == 32
        assert job["diagnostics"]["kl_ref"] is not None  # lm/kl_ref, for the dashboard's chart
        points = alice.get(
            f"/v1/experiments/{job['id']}/metrics/history", params={"key": "lm/reward_mean"}
        ).json()["points"]
        assert [p["step"] for p in points] == [1, 2, 3]
        spec = alice.get(f"/v1/experiments/{job['id']}/artifacts/resolved_spec.yaml")
        assert spec.status_code == 200 and "algorithm: ppo_lm" in spec.text
    # What the run resolved (training/resolved.py): the model, not envs; no server path.
    resolved = job["resolved"]
    assert resolved["model.architecture"] == "GPT2LMHeadModel" and resolved["device"] == "cpu"
    assert resolved["model.policy"] == "arithmetic/sft" and resolved["dtype"] == "float32"
    assert int(resolved["model.parameters"]) > 0 and resolved["reward"] == "1 x exact_answer"
    assert resolved["reference"].startswith("initial (a frozen copy")
    assert resolved["version.transformers"] == metadata.version("transformers")
    assert str(lm_server.home) not in json.dumps(resolved)
    with httpx.Client(base_url=lm_server.url, timeout=30) as browser:  # the dashboard too
        assert browser.post("/login", data={"api_key": KEYS["alice"]}).status_code == 303
        page = browser.get(f"/experiments/{job['id']}").text
    parameters = resolved["model.parameters"]
    assert f"Resolved at start: model GPT2LMHeadModel ({parameters} parameters, float32)" in page


@pytest.mark.slow
def test_an_lm_spec_with_tune_runs_as_a_study_job(lm_server):
    tune = tune_section({"lm.kl.beta": [0.01, 0.1]}, n_trials=1)
    with lm_server.client("alice") as alice:
        response = submit(alice, short_spec(budget__updates=2, tune=tune))
        assert response.status_code == 202, response.text
        assert response.json()["kind"] == "tune"
        job = wait_for(alice, response.json()["id"], timeout=600)
        assert job["status"] == "succeeded", job["error"]
        result = job["result"]
        assert result["best_trial"] == 0 and 0.0 <= result["best_value"] <= 1.0
        best = yaml.safe_load(result["best_spec"])
        assert best["algorithm"] == "ppo_lm" and best["lm"]["kl"]["beta"] in (0.01, 0.1)
        assert "tune" not in best


@pytest.mark.slow
def test_an_lm_spec_with_a_sweep_runs_as_a_sweep_job(lm_server):
    variants = [
        {"advantage.estimator": "gae"},
        {"advantage.estimator": "rloo", "advantage.group_size": 2},
    ]
    sweep = {"variants": variants, "seeds": [0]}
    with lm_server.client("alice") as alice:
        response = submit(alice, short_spec(budget__updates=2, sweep=sweep))
        assert response.status_code == 202, response.text
        assert response.json()["kind"] == "sweep"
        job = wait_for(alice, response.json()["id"], timeout=600)
        assert job["status"] == "succeeded", job["error"]
        runs = job["result"]["runs"]
        names = [r["name"] for r in runs]
        assert names == ["lm-arithmetic-gae-s0", "lm-arithmetic-rloo-group_size2-s0"]
        assert all(r["status"] == "FINISHED" and 0.0 <= r["final_eval_mean"] <= 1.0 for r in runs)
        assert job["result"]["parent_run_id"] == job["mlflow_run_id"]


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"lm__model__policy": "/etc"}, "lm.model.policy"),
        ({"lm__prompts__path": "../../secrets.jsonl"}, "lm.prompts.path"),
        ({"update__epochs": 31}, "update.epochs"),
        ({"surrogate__clip_epsilon": 0.35}, "surrogate.clip_epsilon.start"),
        ({"lm__reduction": None}, "lm.reduction"),
        ({"tune": tune_section({"lm.max_tokens": [2, 4]})}, "tune.space.lm.max_tokens.choices[0]"),
        ({"sweep": {"variants": [{"lm.model.policy": "/etc"}]}}, "lm.model.policy"),
        ({"sweep": {"variants": [{"advantage.estimator": "grpo"}]}}, "advantage.group_size"),
    ],
)
def test_bad_lm_specs_are_422_naming_the_field(lm_server, changes, path):
    with lm_server.client("alice") as alice:
        response = submit(alice, short_spec(**changes))
    assert response.status_code == 422, response.text
    assert response.json()["issues"][0]["path"] == path


def test_validate_takes_an_lm_spec_as_yaml_and_as_typed_json(lm_server):
    with lm_server.client("alice") as alice:
        as_yaml = alice.post(
            "/v1/specs/validate",
            content=short_spec(),
            headers={"Content-Type": "application/yaml"},
        )
        assert as_yaml.status_code == 200, as_yaml.text
        body = as_yaml.json()
        assert (body["kind"], body["name"]) == ("run", "lm-arithmetic")
        assert body["spec"]["algorithm"] == "ppo_lm" and body["spec"]["lm"]["reduction"]
        as_json = alice.post("/v1/specs/validate", json=yaml.safe_load(short_spec()))
        assert as_json.status_code == 200, as_json.text
        assert as_json.json()["spec_hash"] == body["spec_hash"]
        refused = alice.post("/v1/specs/validate", json=yaml.safe_load(short_spec(lm__kl__beta=-1)))
        assert refused.status_code == 422 and "lm.kl.beta" in refused.text


def plan_body(use_case: str) -> dict:
    """A plan request for the demo's model and prompts."""
    return {
        "use_case": use_case,
        "model_dir": "arithmetic/sft",
        "prompts": "arithmetic/train.jsonl",
        "budget": 1280,
    }


def test_plans_rlhf_writes_an_lm_spec_the_service_takes(lm_server):
    body = plan_body("rlhf")
    with lm_server.client("alice") as alice:
        planned = alice.post("/v1/plans", json=body)
        assert planned.status_code == 200, planned.text
        spec = yaml.safe_load(planned.json()["spec_yaml"])
        assert spec["algorithm"] == "ppo_lm" and spec["lm"]["model"]["policy"] == "arithmetic/sft"
        assert spec["lm"]["prompts"]["path"] == "arithmetic/train.jsonl"
        assert spec["lm"]["kl"]["beta"] == 0.05 and spec["lm"]["kl"]["target"] is None
        assert spec["lm"]["prompts_per_update"] * spec["budget"]["updates"] >= 1280
        checked = alice.post(
            "/v1/specs/validate",
            content=planned.json()["spec_yaml"],
            headers={"Content-Type": "application/yaml"},
        )
        assert checked.status_code == 200, checked.text
        mixed = alice.post("/v1/plans", json={**body, "env_id": "CartPole-v1"})
        assert mixed.status_code == 422 and mixed.json()["issues"][0]["path"] == "env_id"
        missing = alice.post("/v1/plans", json={"use_case": "rlhf", "budget": 1280})
        assert [i["path"] for i in missing.json()["issues"]] == ["model_dir", "prompts"]
        outside = alice.post("/v1/plans", json={**body, "model_dir": "/etc"})
        assert outside.status_code == 422, outside.text
        (issue,) = outside.json()["issues"]
        assert issue["path"] == "model_dir" and "LM folder" in issue["fix"]


def test_plans_reasoning_writes_a_grpo_spec_the_service_takes(lm_server):
    """The CLI's `plan --use-case reasoning` over REST: the same planner, the same GRPO spec."""
    body = plan_body("reasoning")
    with lm_server.client("alice") as alice:
        planned = alice.post("/v1/plans", json=body)
        assert planned.status_code == 200, planned.text
        answer = planned.json()
        spec = yaml.safe_load(answer["spec_yaml"])
        assert spec["algorithm"] == "ppo_lm" and spec["lm"]["model"]["policy"] == "arithmetic/sft"
        assert spec["advantage"]["estimator"] == "grpo" and spec["advantage"]["group_size"] == 8
        assert (spec["lm"]["kl"]["estimator"], spec["lm"]["kl"]["beta"]) == ("k3", 0.04)
        assert spec["lm"]["kl"]["placement"] == "loss" and spec["update"]["epochs"] == 2
        assert spec["lm"]["prompts_per_update"] * 8 * spec["budget"]["updates"] >= 1280
        assert spec["tracking"]["tags"]["use_case"] == "reasoning"
        assert answer["summary"].startswith("planned GRPO on the language model arithmetic/sft")
        assert answer["markdown"].startswith("# GRPO on a language model (reasoning)")
        checked = alice.post(
            "/v1/specs/validate",
            content=answer["spec_yaml"],
            headers={"Content-Type": "application/yaml"},
        )
        assert checked.status_code == 200, checked.text
        assert checked.json()["spec"]["advantage"]["estimator"] == "grpo"
        mixed = alice.post("/v1/plans", json={**body, "env_id": "CartPole-v1"})
        assert mixed.status_code == 422, mixed.text
        (issue,) = mixed.json()["issues"]
        assert issue["path"] == "env_id" and "reasoning plan" in issue["message"]
        missing = alice.post("/v1/plans", json={"use_case": "reasoning", "budget": 1280})
        assert [i["path"] for i in missing.json()["issues"]] == ["model_dir", "prompts"]
