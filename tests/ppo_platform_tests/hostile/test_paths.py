"""Class 1: no name a user gives (run id, experiment name) leads outside its folder, and
nothing is unpickled or unzipped from a folder the platform did not create."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from hostile_cli import assert_bad_input, cli
from mlflow.tracking import MlflowClient

from ppo_platform.errors import BadInputError
from ppo_platform.settings import get_settings
from ppo_platform.spec.names import check_run_id, path_inside
from ppo_platform.tracking import tags

HEX_ID = "0123456789abcdef" * 2


class _Bomb:
    """Unpickling this writes a marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (Path.write_text, (str(self.marker), "pwned"))  # type: ignore[return-value]


def _plant(folder: Path, marker: Path) -> None:
    """A run folder as an attacker would craft it: a spec and a booby-trapped checkpoint."""
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "spec.yaml").write_text(
        "name: x\nenv: CartPole-v1\nbudget: {total_timesteps: 2048}\n"
    )
    (folder / "checkpoints" / "step_000000000001.zip").write_bytes(b"PK")
    payload = pickle.dumps(_Bomb(marker))
    (folder / "checkpoints" / "step_000000000001_vecnormalize.pkl").write_bytes(payload)


@pytest.mark.parametrize(
    "run_id",
    [
        "../../somewhere",
        "/etc",
        "",
        ".",
        "..",
        HEX_ID.upper(),
        HEX_ID[:-1],
        HEX_ID + "0",
        f"{HEX_ID}/..",
        "0123abcd-0123-abcd-0123-0123abcd0123",
        " " + HEX_ID,
    ],
)
def test_resume_refuses_anything_but_an_mlflow_run_id(platform_home: Path, run_id: str) -> None:
    assert_bad_input(cli("run", "--resume", run_id), "--resume", "32 lowercase hex digits")
    assert not (platform_home / "runs").exists()


def test_resume_does_not_follow_dotdot_to_a_crafted_folder(
    platform_home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    _plant(tmp_path / "somewhere", marker)
    result = cli("run", "--resume", "../../somewhere")
    assert_bad_input(result)
    assert not marker.exists()


def test_resume_refuses_a_planted_folder_that_no_platform_run_records(
    platform_home: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    _plant(get_settings().runs_dir / HEX_ID, marker)
    result = cli("run", "--resume", HEX_ID)
    assert_bad_input(result, "not a run this platform home created")
    assert not marker.exists()


def test_resume_refuses_checkpoints_that_link_out_of_the_run_folder(
    platform_home: Path, tmp_path: Path
) -> None:
    settings = get_settings()
    client = MlflowClient(settings.tracking_uri)
    run = client.create_run(client.create_experiment("planted"))
    folder = settings.runs_dir / run.info.run_id
    client.set_tag(run.info.run_id, tags.RUN_DIR, str(folder))
    marker = tmp_path / "marker"
    _plant(tmp_path / "outside", marker)
    (folder / "checkpoints").mkdir(parents=True)
    (folder / "spec.yaml").write_text((tmp_path / "outside" / "spec.yaml").read_text())
    for name in ("step_000000000001.zip", "step_000000000001_vecnormalize.pkl"):
        (folder / "checkpoints" / name).symlink_to(tmp_path / "outside" / "checkpoints" / name)
    result = cli("run", "--resume", run.info.run_id)
    assert_bad_input(result, "link out of its folder")
    assert not marker.exists()


@pytest.mark.parametrize("parts", [["..", "x"], ["/etc/passwd"], ["a", "..", "..", "b"]])
def test_path_inside_refuses_paths_that_leave_their_folder(
    tmp_path: Path, parts: list[str]
) -> None:
    with pytest.raises(BadInputError, match="leads outside its folder"):
        path_inside(tmp_path / "root", parts, "name")


def test_path_inside_refuses_a_symlink_out_of_its_folder(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path)
    with pytest.raises(BadInputError):
        path_inside(tmp_path / "root", ["link", "x"], "name")
    assert path_inside(tmp_path / "root", ["plain"], "name") == (tmp_path / "root" / "plain")


def test_run_id_check_accepts_mlflow_ids_only() -> None:
    assert check_run_id(HEX_ID) == HEX_ID
    with pytest.raises(BadInputError):
        check_run_id("0" * 31 + "g")


@pytest.mark.parametrize("run_id", ["../../x", "/tmp", HEX_ID[:8]])
def test_report_refuses_a_parent_run_id_that_is_not_an_id(platform_home: Path, run_id: str) -> None:
    assert_bad_input(cli("report", run_id), "PARENT_RUN_ID")


@pytest.mark.parametrize("run_id", ["../../x", "/tmp", HEX_ID[:8]])
def test_compare_refuses_an_id_that_is_not_a_run_id(platform_home: Path, run_id: str) -> None:
    assert_bad_input(cli("compare", run_id), "ID")


@pytest.mark.parametrize("name", ["../escape", "/abs", "a/b", ".hidden", "x" * 101])
def test_experiment_names_that_are_paths_are_refused(write_spec, name: str) -> None:
    spec = write_spec()
    assert_bad_input(cli("validate", str(spec), "--set", f"tracking.experiment='{name}'"))
