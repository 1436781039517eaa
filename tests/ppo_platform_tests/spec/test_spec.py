"""Schema and defaults: what a minimal spec resolves to, the shorthands, the hash, the schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.spec.experiment import ExperimentSpec, Schedule, flatten
from ppo_platform.spec.loader import load_spec

SPECS_DIR = Path(__file__).resolve().parents[3] / "specs"
# The lesson exercises in specs/exercises/ too; LM specs (lm_*.yaml) need their model built
# first and are checked in test_lm_spec.py.
SHIPPED_SPECS = sorted(p for p in SPECS_DIR.rglob("*.yaml") if not p.name.startswith("lm_"))

# The documented defaults (SB3 and the lessons), by dotted path of the resolved spec.
DOCUMENTED_DEFAULTS = {
    "algorithm": "ppo",
    "env.n_envs": 1,
    "env.vectorization": "auto",
    "env.normalize.obs": False,
    "env.normalize.reward": False,
    "rollout.n_steps": 2048,
    "update.epochs": 10,
    "update.minibatch_size": 64,
    "update.learning_rate.start": 3e-4,
    "update.learning_rate.schedule": "constant",
    "update.max_grad_norm": 0.5,
    "surrogate.clip_epsilon.start": 0.2,
    "surrogate.clip_epsilon.schedule": "constant",
    "surrogate.value_coef": 0.5,
    "surrogate.entropy_coef": 0.0,
    "surrogate.normalize_advantage": True,
    "surrogate.clip_value": None,
    "surrogate.target_kl": None,
    "advantage.gamma": 0.99,
    "advantage.gae_lambda": 0.95,
    "policy.net_arch": [64, 64],
    "policy.activation": "tanh",
    "policy.ortho_init": True,
    "budget.total_timesteps": 100_000,
    "budget.seed": 0,
    "diagnostics.monitor_kl": True,
    "diagnostics.monitor_clip_fraction": True,
    "diagnostics.kl_healthy_max": 0.02,
    "diagnostics.kl_alert": 0.1,
    "diagnostics.clip_fraction_high": 0.5,
    "diagnostics.drift_clip_fraction": 0.4,
    "diagnostics.on_alert": "warn",
    "evaluation.every_timesteps": 10_000,
    "evaluation.episodes": 10,
    "evaluation.deterministic": True,
    "tracking.experiment": None,
}


@pytest.mark.parametrize(
    ("path", "expected"), DOCUMENTED_DEFAULTS.items(), ids=list(DOCUMENTED_DEFAULTS)
)
def test_minimal_spec_resolves_to_documented_default(load, minimal_spec, path, expected):
    resolved = flatten(load(minimal_spec).resolved())
    assert resolved[path] == expected


def test_minimal_spec_uses_its_name_as_experiment_name(load, minimal_spec):
    assert load(minimal_spec).experiment_name == "run"


def test_learning_rate_number_shorthand_means_constant(load, minimal_spec):
    spec = load(minimal_spec + "update:\n  learning_rate: 1e-3\n")
    assert spec.update.learning_rate == Schedule(start=0.001, schedule="constant", end=0.0)


def test_clip_epsilon_number_shorthand_means_constant(load, minimal_spec):
    spec = load(minimal_spec + "surrogate:\n  clip_epsilon: 0.1\n")
    assert spec.surrogate.clip_epsilon == Schedule(start=0.1, schedule="constant")


def test_linear_schedule_keeps_start_and_end(load, minimal_spec):
    spec = load(minimal_spec + "update:\n  learning_rate: {start: 1.0e-3, schedule: linear}\n")
    assert spec.update.learning_rate == Schedule(start=0.001, schedule="linear", end=0.0)


def test_env_id_shorthand_equals_the_mapping_form(load):
    short = load("name: run\nenv: CartPole-v1\n")
    long = load("name: run\nenv: {id: CartPole-v1}\n")
    assert short.env.id == "CartPole-v1"
    assert short == long


def test_spec_hash_is_stable_across_loads(load, minimal_spec):
    first, second = load(minimal_spec).spec_hash(), load(minimal_spec).spec_hash()
    assert first == second
    assert len(first) == 16
    assert int(first, 16) >= 0  # hex digits


def test_spec_hash_ignores_key_order_and_shorthand(load):
    explicit = "env: {id: CartPole-v1}\nname: run\nupdate: {learning_rate: {start: 0.001}}\n"
    short = "name: run\nenv: CartPole-v1\nupdate: {learning_rate: 1e-3}\n"
    assert load(explicit).spec_hash() == load(short).spec_hash()


def test_spec_hash_changes_when_a_value_changes(load, minimal_spec):
    base = load(minimal_spec).spec_hash()
    assert load(minimal_spec + "advantage: {gamma: 0.98}\n").spec_hash() != base
    assert load(minimal_spec, ["budget.seed=1"]).spec_hash() != base


def test_schema_command_prints_json_schema_with_descriptions():
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    published = json.loads(result.stdout)
    assert published["title"] == "Spec" and "algorithm" in published["description"]
    schema = published["$defs"]["ExperimentSpec"]
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"name", "env"}
    lm = published["$defs"]["LMExperimentSpec"]
    assert set(lm["required"]) == {"name", "algorithm", "lm"}
    epochs = published["$defs"]["UpdateSpec"]["properties"]["epochs"]
    assert epochs["default"] == 10
    assert "refused above 30" in epochs["description"]


def referenced_models(schema: dict, node: object, seen: set[str]) -> set[str]:
    """Names of the $defs models that `node` refers to, directly or through other models."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        name = ref.rsplit("/", 1)[-1]
        if ref and name not in seen:
            seen.add(name)
            referenced_models(schema, schema["$defs"][name], seen)
        for value in node.values():
            referenced_models(schema, value, seen)
    elif isinstance(node, list):
        for value in node:
            referenced_models(schema, value, seen)
    return seen


def test_schema_documents_every_leaf_field_of_the_training_spec():
    schema = ExperimentSpec.model_json_schema()
    # sweep/tune are optional sections of a later issue; the training spec is this contract.
    sections = {k: v for k, v in schema["properties"].items() if k not in ("sweep", "tune")}
    models = {"ExperimentSpec": {"properties": sections}}
    models |= {name: schema["$defs"][name] for name in referenced_models(schema, sections, set())}
    undocumented = [
        f"{model}.{field}"
        for model, definition in models.items()
        for field, prop in definition["properties"].items()
        if "$ref" not in prop and not prop.get("description")
    ]
    assert "PolicySpec" in models
    assert undocumented == []


def test_specs_folder_ships_the_issue_specs():
    assert {"cartpole.yaml", "gridworld.yaml", "pendulum.yaml"} <= {p.name for p in SHIPPED_SPECS}


@pytest.mark.parametrize(
    "path", SHIPPED_SPECS, ids=[str(p.relative_to(SPECS_DIR)) for p in SHIPPED_SPECS]
)
def test_shipped_spec_validates(path):
    spec = load_spec(path)
    assert spec.name


def test_cartpole_spec_has_rl_zoo_tuned_values():
    spec = load_spec(Path(__file__).resolve().parents[3] / "specs" / "cartpole.yaml")
    assert (spec.env.n_envs, spec.rollout.n_steps, spec.update.minibatch_size) == (8, 32, 256)
    assert spec.update.epochs == 20
    assert (spec.advantage.gamma, spec.advantage.gae_lambda) == (0.98, 0.8)
    assert spec.update.learning_rate == Schedule(start=1e-3, schedule="linear")
    assert spec.surrogate.clip_epsilon == Schedule(start=0.2, schedule="linear")
    assert spec.budget.total_timesteps == 100_000
