"""Typed errors: one kind per failure, one mapping to exit codes and one to HTTP statuses."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_UNAVAILABLE,
    BadInputError,
    ConflictError,
    NotFoundError,
    PlatformError,
    RunNotFoundError,
    SpecError,
    SpecIssue,
    TrainingError,
    UnavailableError,
    exit_code,
    http_status,
)
from ppo_platform.planner import plan_experiment, write_plan
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.spec.rules import SEARCH_SPACE_RULE, TRUST_REGION_RULE, search_space_refusal
from ppo_platform.tuning.errors import TrialFailed, TuningError

ISSUE = SpecIssue("out", "cannot write.", "/x")
MINIMAL = "name: t\nenv: CartPole-v1\n"


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        (SpecError([ISSUE]), EXIT_BAD_INPUT, 422),
        (BadInputError([ISSUE]), EXIT_BAD_INPUT, 422),
        (ConflictError([ISSUE]), EXIT_BAD_INPUT, 409),
        (NotFoundError("no such thing"), EXIT_BAD_INPUT, 404),
        (RunNotFoundError("no such run"), EXIT_BAD_INPUT, 404),
        (UnavailableError("db down"), EXIT_UNAVAILABLE, 503),
        (TrainingError("diverged"), EXIT_FAILED, 500),
        (TuningError("no completed trial"), EXIT_FAILED, 500),
        (TrialFailed("diverged"), EXIT_FAILED, 500),
        (PlatformError("anything else"), EXIT_FAILED, 500),
    ],
)
def test_each_kind_maps_to_one_exit_code_and_one_http_status(error, code, status):
    assert (exit_code(error), http_status(error)) == (code, status)


def test_interrupt_exits_130_and_unknown_errors_fall_back_to_1_and_500():
    assert exit_code(KeyboardInterrupt()) == EXIT_INTERRUPTED == 130
    assert (exit_code(ValueError()), http_status(ValueError())) == (1, 500)


def test_every_kind_is_a_platform_error_and_run_not_found_is_not_found():
    for kind in (SpecError, BadInputError, ConflictError, NotFoundError, UnavailableError):
        assert issubclass(kind, PlatformError)
    assert issubclass(RunNotFoundError, NotFoundError)
    assert issubclass(SpecError, BadInputError)
    assert issubclass(TuningError, TrainingError)


def test_a_refusal_is_known_by_its_rule_not_by_its_message():
    text = MINIMAL + "update: {epochs: 31}\n"
    with pytest.raises(SpecError) as caught:
        load_spec_text(text)
    assert caught.value.refused
    [body] = caught.value.to_dict()
    assert body["rule"] == TRUST_REGION_RULE
    assert body["path"] == "update.epochs" and body["line"] == 3


def test_a_message_that_starts_with_refused_is_not_a_refusal():
    error = SpecError([SpecIssue("name", "refused-looking text, but a plain mistake.")])
    assert not error.refused
    assert error.to_dict()[0]["rule"] is None


def test_a_plain_mistake_is_not_refused_and_keeps_a_422_body():
    with pytest.raises(SpecError) as caught:
        load_spec_text(MINIMAL + "update: {epochs: 0}\n")
    assert not caught.value.refused
    assert set(caught.value.to_dict()[0]) == {
        "path",
        "value",
        "line",
        "column",
        "message",
        "fix",
        "rule",
    }


def test_search_space_refusal_is_the_one_message_for_an_unsafe_bound():
    text = MINIMAL + "tune:\n  space:\n    update.epochs: {type: int, low: 1, high: 40}\n"
    with pytest.raises(SpecError) as caught:
        load_spec_text(text)
    [issue] = caught.value.issues
    assert issue.rule == SEARCH_SPACE_RULE
    refused = SpecIssue("update.epochs", "refused: K too high.", 40, fix="less.", rule="r")
    made = search_space_refusal("update.epochs", "high", 40, refused)
    assert made.message == "refused: the search space can sample update.epochs = 40: K too high."


def test_unwritable_plan_folder_is_bad_input_naming_the_folder_not_a_spec_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    plan = plan_experiment("CartPole-v1", 100_000)
    with pytest.raises(BadInputError) as caught:
        write_plan(plan, blocker / "out")
    assert not isinstance(caught.value, SpecError)
    assert caught.value.issues[0].path == "out"
    assert caught.value.issues[0].value == str(blocker / "out")


def test_storage_url_errors_are_bad_input_and_a_silent_database_is_unavailable(
    tmp_path: Path,
) -> None:
    from ppo_platform.tuning.study import open_storage

    with pytest.raises(BadInputError) as caught:
        open_storage("nosuchdialect://host/db")
    assert not isinstance(caught.value, SpecError)
    assert caught.value.issues[0].path == "--storage"
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(BadInputError) as caught:
        open_storage(f"journal:{blocker / 'sub' / 'studies.journal'}")
    assert caught.value.issues[0].value == str(blocker / "sub")
    with pytest.raises(UnavailableError) as down:
        open_storage(f"sqlite:///{blocker / 'studies.db'}")  # a file is no folder: cannot open
    assert exit_code(down.value) == EXIT_UNAVAILABLE


def test_cli_exits_with_the_mapped_code_for_an_unavailable_storage(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(MINIMAL + "tune:\n  space:\n    update.epochs: {type: int, low: 1, high: 4}\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["tune", str(spec), "--storage", f"sqlite:///{blocker}/x"])
    assert result.exit_code == EXIT_UNAVAILABLE, result.output
    assert result.output.startswith(
        "error: the Optuna storage (--storage, or PPO_PLATFORM_OPTUNA_STORAGE_URL) sqlite:///"
    )
