"""Class 2: output folders chosen by a name stay inside the outputs folder, and files a user
already has are not overwritten without --force. Every refusal comes before any training."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_cli import assert_bad_input, cli

from ppo_platform.settings import get_settings
from ppo_platform.tuning.outputs import check_writable

REPO = Path(__file__).resolve().parents[3]
TUNE_SPEC = str(REPO / "specs" / "tune_cartpole.yaml")


@pytest.fixture
def outputs(platform_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PPO_PLATFORM_OUTPUTS_DIR", str(tmp_path / "outputs"))
    get_settings.cache_clear()
    return tmp_path / "outputs"


@pytest.mark.parametrize(
    "study",
    ["/../../../../elsewhere", "../up", "a/b", "", ".hidden", "-dash", "x" * 101, "a\nb"],
)
def test_tune_refuses_study_names_that_are_not_safe_names(
    outputs: Path, tmp_path: Path, study: str
) -> None:
    result = cli("tune", TUNE_SPEC, "--study", study)
    assert_bad_input(result, "--study", "is not a safe name")
    assert not outputs.exists()
    assert not (get_settings().home / "mlflow.db").exists()  # refused before any run


def test_tune_refuses_to_overwrite_files_in_out_without_force(
    outputs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.md").write_text("my notes")
    result = cli("tune", TUNE_SPEC, "--out", str(out))
    assert_bad_input(result, "--out", "refusing to overwrite", "--force")
    assert (out / "summary.md").read_text() == "my notes"
    assert not (get_settings().home / "mlflow.db").exists()


def test_tune_refuses_a_symlink_in_out_without_force(outputs: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "best_spec.yaml").symlink_to(tmp_path / "target-elsewhere")
    assert_bad_input(cli("tune", TUNE_SPEC, "--out", str(out)), "best_spec.yaml")
    assert not (tmp_path / "target-elsewhere").exists()


def _plan(out: Path, *extra: str):  # type: ignore[no-untyped-def]
    return cli("plan", "--env", "CartPole-v1", "--budget", "20000", "--out", str(out), *extra)


def test_plan_refuses_to_overwrite_an_existing_spec(tmp_path: Path) -> None:
    (tmp_path / "spec.yaml").write_text("mine")
    assert_bad_input(_plan(tmp_path), "spec.yaml", "--force")
    assert (tmp_path / "spec.yaml").read_text() == "mine"
    assert not (tmp_path / "skill-ppo-trainer.md").exists()


def test_plan_twice_into_one_folder_needs_force_the_second_time(tmp_path: Path) -> None:
    assert _plan(tmp_path).exit_code == 0
    first = (tmp_path / "skill-ppo-trainer.md").read_text()
    assert_bad_input(_plan(tmp_path), "skill-ppo-trainer.md")
    forced = _plan(tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    assert (tmp_path / "skill-ppo-trainer.md").read_text() == first


@pytest.mark.parametrize(
    "out", ["/proc/x", "/proc/self/x/y", "/dev/null/x", "{file}", "{file}/sub", "/sys/x"]
)
def test_tune_refuses_an_unwritable_out_before_any_trial(
    outputs: Path, tmp_path: Path, out: str
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    result = cli("tune", TUNE_SPEC, "--out", out.format(file=a_file))
    assert_bad_input(result, "--out", "cannot write the study outputs", max_lines=2)
    assert a_file.read_text() == "mine"
    assert not (get_settings().home / "mlflow.db").exists()  # no study run, no trial


def test_tune_refuses_an_unwritable_outputs_dir_before_any_trial(
    platform_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("mine")
    monkeypatch.setenv("PPO_PLATFORM_OUTPUTS_DIR", str(tmp_path / "a-file"))
    get_settings.cache_clear()
    assert_bad_input(cli("tune", TUNE_SPEC), "--out", "tune-", max_lines=2)
    assert not (get_settings().home / "mlflow.db").exists()


def test_the_writability_probe_leaves_no_folder_behind(outputs: Path, tmp_path: Path) -> None:
    check_writable(tmp_path / "new" / "deeper")
    assert not (tmp_path / "new").exists()
    (tmp_path / "kept").mkdir()
    check_writable(tmp_path / "kept")
    assert (tmp_path / "kept").is_dir() and not any((tmp_path / "kept").iterdir())


def test_plan_and_tune_share_the_default_outputs_folder(outputs: Path, tmp_path: Path) -> None:
    result = cli("plan", "--env", "CartPole-v1", "--budget", "20000")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in outputs.iterdir()) == ["skill-ppo-trainer.md", "spec.yaml"]
    assert_bad_input(cli("plan", "--env", "CartPole-v1", "--budget", "20000"), "--force")


def test_plan_refuses_an_unwritable_out(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("mine")
    for out in (tmp_path / "a-file", tmp_path / "a-file" / "sub", Path("/proc/x")):
        result = _plan(out)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and "--out" in result.output
    assert (tmp_path / "a-file").read_text() == "mine"
