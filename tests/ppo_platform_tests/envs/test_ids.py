"""One env-id check for `run` and `plan`: the same typo gets the same suggestions from both."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.envs.ids import check_env_id, close_env_ids, registered_env_ids
from ppo_platform.errors import SpecError

runner = CliRunner()
EXIT_BAD_INPUT = 2


def suggestion(stderr: str) -> str:
    found = re.search(r"did you mean [^?]*\?", stderr)
    assert found, stderr
    return found.group(0)


def test_a_known_id_passes() -> None:
    check_env_id("CartPole-v1")
    check_env_id("ppo_platform/GridWorld-v0")


def test_an_unknown_id_names_the_field_the_value_and_close_matches() -> None:
    with pytest.raises(SpecError) as caught:
        check_env_id("CartPol-v1")
    (issue,) = caught.value.issues
    assert (issue.path, issue.value) == ("env.id", "CartPol-v1")
    assert issue.fix is not None and issue.fix.startswith("did you mean CartPole-v1")


def test_close_matches_ignore_case_and_find_our_own_envs() -> None:
    known = registered_env_ids()
    assert close_env_ids("cartpole-v1", known)[0] == "CartPole-v1"
    assert "ppo_platform/GridWorld-v0" in close_env_ids("gridworld", known)


def test_run_and_plan_suggest_the_same_ids_for_the_same_typo(
    platform_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: typo\nenv: cartpol-v1\n")
    ran = runner.invoke(app, ["run", str(spec), "--quiet"])
    planned = runner.invoke(
        app, ["plan", "--env", "cartpol-v1", "--budget", "100000", "--out", str(tmp_path / "o")]
    )
    assert (ran.exit_code, planned.exit_code) == (EXIT_BAD_INPUT, EXIT_BAD_INPUT)
    assert suggestion(ran.stderr) == suggestion(planned.stderr)
    assert suggestion(ran.stderr).startswith("did you mean CartPole-v1")
    assert not (platform_home / "runs").exists()
