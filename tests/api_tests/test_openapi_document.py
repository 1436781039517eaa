"""The OpenAPI document as a contract: named operations and schemas, the spec's own JSON Schema
as the spec body, typed bodies, and for each route only the statuses it can answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ppo_platform.api.app import create_app
from ppo_platform.jobs.models import EVENT_KINDS
from ppo_platform.planner import PLAN_USE_CASES
from ppo_platform.spec.any_spec import spec_json_schema

# (method, path) -> (operation id, statuses the route can answer)
OPERATIONS = {
    ("get", "/healthz"): ("healthz", {"200"}),
    ("get", "/readyz"): ("readyz", {"200", "503"}),
    ("post", "/v1/specs/validate"): (
        "validateSpec",
        {"200", "401", "408", "413", "415", "422", "429", "503"},
    ),
    ("post", "/v1/plans"): (
        "createPlan",
        {"200", "400", "401", "408", "413", "422", "429", "503"},
    ),
    ("post", "/v1/experiments"): (
        "submitExperiment",
        {"200", "202", "401", "408", "413", "415", "422", "429", "503"},
    ),
    ("get", "/v1/experiments"): ("listExperiments", {"200", "401", "422", "503"}),
    ("get", "/v1/envs"): ("listEnvs", {"200", "401", "422", "503"}),
    ("get", "/v1/experiments/{experiment_id}"): (
        "getExperiment",
        {"200", "401", "404", "422", "503"},
    ),
    ("post", "/v1/experiments/{experiment_id}/cancel"): (
        "cancelExperiment",
        {"202", "401", "404", "409", "422", "429", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/events"): (
        "streamEvents",
        {"200", "401", "404", "422", "429", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/alerts"): (
        "listAlerts",
        {"200", "401", "404", "422", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/metrics"): (
        "listMetrics",
        {"200", "401", "404", "422", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/metrics/history"): (
        "getMetricHistory",
        {"200", "401", "404", "422", "503"},
    ),
    ("get", "/v1/comparisons"): ("compareExperiments", {"200", "401", "404", "422", "503"}),
    ("get", "/v1/experiments/{experiment_id}/artifacts"): (
        "listArtifacts",
        {"200", "401", "404", "422", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/artifacts/{name}"): (
        "downloadArtifact",
        {"200", "401", "404", "413", "422", "503"},
    ),
    ("get", "/v1/experiments/{experiment_id}/diagnosis"): (
        "getDiagnosis",
        {"200", "401", "404", "422", "503"},
    ),
}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return create_app().openapi()


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method, path): operation
        for path, item in document["paths"].items()
        for method, operation in item.items()
    }


def test_every_operation_has_a_named_id_and_only_the_statuses_it_can_answer(document) -> None:
    found = {
        key: (operation["operationId"], set(operation["responses"]))
        for key, operation in _operations(document).items()
    }
    for key, expected in OPERATIONS.items():
        assert found.get(key) == expected, key
    for key, (operation_id, _statuses) in found.items():  # routes added later: named too
        assert operation_id.isalnum() and operation_id[0].islower(), key


def test_every_error_status_has_the_one_error_body(document) -> None:
    for key, operation in _operations(document).items():
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")) and key != ("get", "/readyz"):
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorPublic"}, (key, status)


def test_the_spec_body_is_the_specs_own_json_schema(document) -> None:
    spec_ref = {
        "oneOf": [
            {"$ref": "#/components/schemas/ExperimentSpec"},
            {"$ref": "#/components/schemas/LMExperimentSpec"},
        ]
    }
    for path in ("/v1/specs/validate", "/v1/experiments"):
        body = document["paths"][path]["post"]["requestBody"]
        assert body["content"] == {"application/json": {"schema": spec_ref}}
        yaml_forms = body["x-alternative-content"]
        assert set(yaml_forms) == {"application/yaml", "application/x-yaml", "text/yaml"}
        assert all(form == {"schema": spec_ref} for form in yaml_forms.values())
    published = spec_json_schema()  # what `ppo-platform schema` prints
    as_components = _without_null_defaults(
        json.loads(json.dumps(published).replace('"#/$defs/', '"#/components/schemas/'))
    )
    components = document["components"]["schemas"]
    for name, schema in as_components.pop("$defs").items():
        assert _without_null_defaults(components[name]) == schema, name
    assert as_components["oneOf"] == spec_ref["oneOf"]
    lm = components["LMExperimentSpec"]["properties"]["algorithm"]
    assert lm["const"] == "ppo_lm"
    assert "ppo_lm" not in components["ExperimentSpec"]["properties"]["algorithm"]["enum"]


def _without_null_defaults(schema: Any) -> Any:
    """FastAPI leaves out `"default": null`; nothing else may differ."""
    if isinstance(schema, dict):
        return {
            key: _without_null_defaults(value)
            for key, value in schema.items()
            if not (key == "default" and value is None)
        }
    if isinstance(schema, list):
        return [_without_null_defaults(item) for item in schema]
    return schema


def test_progress_result_diagnostics_and_events_are_typed(document) -> None:
    schemas = document["components"]["schemas"]
    experiment = schemas["ExperimentPublic"]["properties"]
    refs = {
        field: sorted(
            option.get("$ref", "null").rsplit("/", 1)[-1]
            for option in experiment[field].get("anyOf", [experiment[field]])
        )
        for field in ("progress", "result", "diagnostics", "status", "kind")
    }
    assert refs == {
        "progress": ["RunProgress", "SweepProgress", "TuneProgress", "null"],
        "result": ["RunResultPublic", "SweepResultPublic", "TuneResultPublic", "null"],
        "diagnostics": ["Diagnostics"],
        "status": ["ExperimentStatus"],
        "kind": ["ExperimentKind"],
    }
    items = schemas["EventList"]["properties"]["items"]["items"]
    assert items["discriminator"]["propertyName"] == "kind"
    assert set(items["discriminator"]["mapping"]) == set(EVENT_KINDS)
    for moment in ("created_at", "started_at", "finished_at"):
        text = json.dumps(experiment[moment])
        assert '"format": "date-time"' in text, moment


def test_an_unknown_use_case_or_a_malformed_env_id_is_outside_the_plan_schema(document) -> None:
    plan = document["components"]["schemas"]["PlanCreate"]
    assert plan["additionalProperties"] is False
    assert "pattern" in plan["properties"]["env_id"]["anyOf"][0]  # optional: not for rlhf
    # Every use case the CLI's planner takes, and only those.
    assert plan["properties"]["use_case"]["enum"] == list(PLAN_USE_CASES)
    assert {"auto", "rlhf", "reasoning"} <= set(PLAN_USE_CASES)


def test_a_verified_trials_interval_is_described_as_what_it_is(document) -> None:
    """ci95 is the bootstrap interval of the mean over the held-out seeds (not of the score,
    which `tune.aggregate` may take as a quantile), and the document says so."""
    from ppo_platform.reports.statistics import bootstrap_interval
    from ppo_platform.tuning.verify import spread

    fields = document["components"]["schemas"]["TrialVerifiedData"]["properties"]
    said = fields["ci95"]["description"]
    assert "bootstrap 95% interval of the mean of `seed_values`" in said, said
    assert "null with one held-out seed" in said
    assert "tune.aggregate" in fields["held_out_value"]["description"]
    scores = [10.0, 200.0, 480.0, 500.0, 500.0]
    assert spread(scores)["ci95"] == list(bootstrap_interval(scores, "mean"))
    assert spread(scores)["ci95"] != list(bootstrap_interval(scores, "iqm"))
    assert spread([500.0])["ci95"] is None
