"""Class 6: the smaller holes. Non-regular spec files, files that are no spec, reserved tags,
over-long documents, errors of --set values, unregistered ids at validate, SB3 temp folders."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from pathlib import Path

import pytest
from hostile_cli import TINY_GRID, assert_bad_input, cli


def test_a_fifo_without_a_writer_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(cli("validate", str(fifo))))
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "validate hung on a FIFO"
    assert_bad_input(outcome[0], "not a regular file")  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["/dev/null", "/dev/zero", "/tmp"])
def test_devices_and_folders_are_refused(path: str) -> None:
    assert_bad_input(cli("validate", path), "cannot read the spec file")


def test_a_unix_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        assert_bad_input(cli("validate", str(path)), "cannot read the spec file")


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(f"key{i}: value {i}" for i in range(500)),  # an .ini or env file
        "\n".join(f"- item {i}" for i in range(500)),  # a list
        "\n".join(f"k{i}: {{a: 1}}" for i in range(200)),
    ],
)
def test_a_file_that_is_no_spec_is_not_echoed_back(tmp_path: Path, text: str) -> None:
    path = tmp_path / "notes.yaml"
    path.write_text(text)
    result = cli("validate", str(path))
    assert_bad_input(result, max_lines=12)
    assert len(result.output) < 3000


@pytest.mark.parametrize(
    "key", ["mlflow.parentRunId", "mlflow.runName", "ppo_platform.sweep_key", "MLflow.user"]
)
def test_reserved_tags_cannot_be_set_by_a_spec(write_spec, key: str) -> None:
    spec = write_spec(f"tracking: {{tags: {{'{key}': forged}}}}\n")
    assert_bad_input(cli("validate", str(spec)), "tracking.tags", "reserved")


def test_plain_tags_are_still_allowed(write_spec) -> None:
    spec = write_spec("tracking: {tags: {team: rl, mlflow_like: x}}\n")
    assert cli("validate", str(spec)).exit_code == 0


def test_many_plain_values_are_not_called_an_alias_bomb(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    path.write_text(
        TINY_GRID
        + "tracking: {tags: {x: '1'}}\nsweep:\n  seeds: ["
        + ", ".join(str(i) for i in range(10_001))
        + "]\n"
    )
    result = cli("validate", str(path))
    assert_bad_input(result, "more than 10000 values")
    assert "alias" not in result.output


def test_a_real_alias_bomb_is_still_named_one(tmp_path: Path) -> None:
    lines = ["a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    for i, name in enumerate("bcdefg"):
        prev = "a" if i == 0 else "bcdefg"[i - 1]
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 10) + "]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert_bad_input(cli("validate", str(path)), "alias")


@pytest.mark.parametrize(
    "assignment",
    ["surrogate.clip_epsilon.end=0.5", "update.learning_rate.schedule=linear"],
)
def test_set_on_a_missing_mapping_does_not_blame_line_1(write_spec, assignment: str) -> None:
    result = cli("validate", str(write_spec()), "--set", assignment)
    assert_bad_input(result, "start")
    assert ":1:1:" not in result.output


@pytest.mark.parametrize("env_id", ["NoSuchEnv-v0", "cartpole-v1", "ALE/NoSuchGame-v5"])
def test_validate_refuses_what_run_refuses(tmp_path: Path, env_id: str) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(f"name: t\nenv: {{id: '{env_id}'}}\n")
    assert_bad_input(cli("validate", str(path)), "env.id")


def test_a_run_leaves_no_sb3_folder_in_tmpdir(
    platform_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    spec = tmp_path / "tiny.yaml"
    spec.write_text(TINY_GRID)
    result = cli("run", str(spec))
    assert result.exit_code == 0, result.output
    assert not list(scratch.glob("SB3-*"))
