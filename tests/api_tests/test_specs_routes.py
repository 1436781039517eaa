"""POST /v1/specs/validate and /v1/plans: YAML and JSON, every issue, 413, 415."""

from __future__ import annotations

import json


def test_validate_yaml_returns_the_resolved_spec(alice) -> None:
    for media in ("application/yaml", "application/x-yaml", "text/yaml"):
        response = alice.post(
            "/v1/specs/validate",
            content="name: cp\nenv: CartPole-v1\n",
            headers={"Content-Type": media},
        )
        assert response.status_code == 200, response.text
        body = response.json()
        assert (body["kind"], body["name"]) == ("run", "cp")
        assert body["spec"]["env"]["id"] == "CartPole-v1" and "epochs" in body["spec"]["update"]


def test_validate_json_and_a_sweep_kind(alice) -> None:
    spec = {"name": "sw", "env": "CartPole-v1", "sweep": {"grid": {"update.epochs": [1, 4]}}}
    response = alice.post("/v1/specs/validate", json=spec)
    assert response.status_code == 200, response.text
    assert response.json()["kind"] == "sweep"


def test_validate_lists_every_issue_with_line_column_and_rule(alice) -> None:
    text = "name: cp\nenv: CartPole-v1\nupdate:\n  epochs: 40\nsurrogate:\n  clip_epsilon: 0.5\n"
    response = alice.post(
        "/v1/specs/validate", content=text, headers={"Content-Type": "application/yaml"}
    )
    assert response.status_code == 422
    body = response.json()
    assert body["type"] == "SpecError"
    issues = {i["path"]: i for i in body["issues"]}
    assert issues["update.epochs"]["value"] == 40
    assert (issues["update.epochs"]["line"], issues["update.epochs"]["column"]) == (4, 3)
    assert issues["update.epochs"]["rule"] == "unsafe_trust_region"
    assert any(i["value"] == 0.5 and i["line"] == 6 for i in body["issues"])


def test_env_ids_must_be_registered_never_entry_points(alice) -> None:
    response = alice.post(
        "/v1/specs/validate",
        content="name: x\nenv: os:system\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert response.status_code == 422
    assert response.json()["issues"][0]["path"] == "env.id"


def test_other_content_types_are_415_and_big_bodies_413(alice) -> None:
    wrong = alice.post("/v1/specs/validate", content="x", headers={"Content-Type": "text/csv"})
    assert wrong.status_code == 415 and wrong.json()["type"] == "UnsupportedMediaType"
    big = alice.post(
        "/v1/specs/validate",
        content="name: x\n" + "#" * 2_000_000,
        headers={"Content-Type": "application/yaml"},
    )
    assert big.status_code == 413
    assert "1000000 bytes" in big.json()["message"]

    def chunks():
        for _ in range(30):
            yield b"#" * 100_000

    streamed = alice.post(
        "/v1/experiments", content=chunks(), headers={"Content-Type": "application/yaml"}
    )
    assert streamed.status_code == 413


def test_plan_returns_spec_and_markdown_or_markdown_alone(alice) -> None:
    body = {"env_id": "CartPole-v1", "budget": 50_000}
    planned = alice.post("/v1/plans", json=body)
    assert planned.status_code == 200, planned.text
    assert (
        "env:" in planned.json()["spec_yaml"] and "name: ppo-trainer" in planned.json()["markdown"]
    )
    markdown = alice.post("/v1/plans", json=body, headers={"Accept": "text/markdown"})
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert markdown.text == planned.json()["markdown"]


def test_plan_errors_name_the_field(alice) -> None:
    unknown = alice.post("/v1/plans", json={"env_id": "CartPol-v1", "budget": 50_000})
    assert unknown.status_code == 422
    assert "CartPole-v1" in json.dumps(unknown.json())
    negative = alice.post("/v1/plans", json={"env_id": "CartPole-v1", "budget": -1})
    assert negative.status_code == 422
    assert negative.json()["issues"][0]["path"] == "body.budget"


def test_plan_refuses_an_unknown_use_case_naming_it_and_the_ones_there_are(alice) -> None:
    body = {"env_id": "CartPole-v1", "budget": 50_000, "use_case": "reasonning"}
    refused = alice.post("/v1/plans", json=body)
    assert refused.status_code == 422, refused.text
    (issue,) = refused.json()["issues"]
    assert (issue["path"], issue["value"]) == ("body.use_case", "reasonning")
    assert "'reasoning'" in issue["fix"] and "'rlhf'" in issue["fix"] and "'auto'" in issue["fix"]
    assert "body.use_case" in refused.json()["message"]
