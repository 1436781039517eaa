"""`ppo-platform validate` and `schema`: exit codes, messages, and no heavy imports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from ppo_platform.cli import EXIT_BAD_INPUT, EXIT_OK, app
from ppo_platform.spec.loader import load_spec

runner = CliRunner()


@pytest.fixture
def cartpole(repo_root):
    return repo_root / "specs" / "cartpole.yaml"


def test_exit_codes_are_the_documented_ones():
    assert (EXIT_OK, EXIT_BAD_INPUT) == (0, 2)


def test_validate_accepts_cartpole_and_prints_its_hash(cartpole):
    result = runner.invoke(app, ["validate", str(cartpole)])
    assert result.exit_code == 0, result.output
    expected_hash = load_spec(cartpole).spec_hash()
    assert f"(hash {expected_hash})" in result.stdout
    assert "valid ppo spec 'cartpole-ppo'" in result.stdout


def test_validate_refuses_an_unsafe_spec_with_exit_2(write_spec, minimal_spec):
    path = write_spec(minimal_spec + "update:\n  epochs: 31\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("refused: ")
    assert f"{path}:4:3: update.epochs = 31: refused" in result.stderr
    assert result.stdout == ""


def test_validate_rejects_a_malformed_spec_with_exit_2(write_spec):
    path = write_spec("name: run\nenv: CartPole-v1\nupdate: {epochs: 4\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert "YAML syntax error" in result.stderr
    assert f"{path}:4:" in result.stderr


def test_validate_rejects_a_missing_file_with_exit_2(tmp_path):
    result = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "cannot read the spec file" in result.stderr


def test_validate_lists_every_issue_on_its_own_line(write_spec):
    path = write_spec("name: my run\nenv: CartPole-v1\nupdate: {epochz: 3}\n")
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "error:"
    assert [line.split(": ")[1] for line in lines[1:]] == ["name = 'my run'", "update.epochz"]


def test_validate_applies_set_overrides(cartpole):
    result = runner.invoke(app, ["validate", str(cartpole), "--set", "update.epochs=31"])
    assert result.exit_code == 2
    assert "update.epochs = 31: refused" in result.stderr


def test_validate_accepts_a_valid_override(cartpole):
    result = runner.invoke(
        app, ["validate", str(cartpole), "--set", "update.epochs=4", "--set", "budget.seed=3"]
    )
    assert result.exit_code == 0, result.output
    assert load_spec(cartpole, ["update.epochs=4", "budget.seed=3"]).spec_hash() in result.stdout


def test_validate_show_prints_the_resolved_yaml(cartpole):
    result = runner.invoke(app, ["validate", str(cartpole), "--show"])
    assert result.exit_code == 0, result.output
    resolved = yaml.safe_load(result.stdout.split("\n", 1)[1])
    assert resolved["update"]["epochs"] == 20
    assert resolved["update"]["learning_rate"] == {"start": 0.001, "schedule": "linear", "end": 0.0}
    assert resolved["diagnostics"]["on_alert"] == "warn"
    assert resolved["surrogate"]["target_kl"] is None  # defaults are filled in


def test_schema_command_exits_0_with_json(repo_root):
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema["oneOf"] == [
        {"$ref": "#/$defs/ExperimentSpec"},
        {"$ref": "#/$defs/LMExperimentSpec"},
    ]
    assert schema["$defs"]["ExperimentSpec"]["properties"]["name"]["pattern"]
    assert schema["$defs"]["LMExperimentSpec"]["properties"]["algorithm"]["const"] == "ppo_lm"


def test_validate_runs_as_a_subprocess(repo_root):
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "validate", "specs/cartpole.yaml"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok: specs/cartpole.yaml is a valid ppo spec")


def test_validate_subprocess_exits_2_on_a_refused_spec(repo_root, write_spec, minimal_spec):
    path = write_spec(minimal_spec + "diagnostics:\n  monitor_kl: false\n")
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "validate", str(path)],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "diagnostics.monitor_kl = False: refused" in done.stderr


_VALIDATE_LIGHTLY = """
from typer.testing import CliRunner
import ppo_platform.cli
from ppo_platform.spec.loader import load_spec
load_spec("specs/cartpole.yaml")
result = CliRunner().invoke(ppo_platform.cli.app, ["validate", "specs/cartpole.yaml"])
assert result.exit_code == 0, result.output
"""


def test_validate_imports_no_torch_sb3_mlflow_or_optuna(heavy_imports_of):
    assert heavy_imports_of(_VALIDATE_LIGHTLY) == []
