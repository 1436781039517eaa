"""Class 5: input that cannot be used is answered with one clear message and exit 2, never a
traceback, and no MLflow run is created before the env and the storage have been checked."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hostile_cli import assert_bad_input, cli

from ppo_platform.errors import BadInputError
from ppo_platform.jobs.database import make_engine
from ppo_platform.settings import get_settings

UNUSABLE_ENVS = {
    "LunarLander-v3": "dependency that is not installed",  # Box2D missing
    "CarRacing-v3": "dependency that is not installed",
    "Reacher-v2": "dependency that is not installed",  # moved to gymnasium-robotics
    "phys2d/CartPole-v1": "dependency that is not installed",  # jax
    "Blackjack-v1": "Tuple observation space",
    "Taxi-v3": "not a registered gymnasium environment",  # deprecated
    "NoSuchEnv-v0": "not a registered gymnasium environment",
}
if importlib.util.find_spec("Box2D") is not None:  # the box2d extra (make bench-full) is in
    del UNUSABLE_ENVS["LunarLander-v3"], UNUSABLE_ENVS["CarRacing-v3"]


def _spec(tmp_path: Path, env: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(
        f"name: t\nenv: {env}\nrollout: {{n_steps: 32}}\n"
        "update: {minibatch_size: 32}\nbudget: {total_timesteps: 64}\n"
    )
    return path


def _no_run_created() -> bool:
    return not (get_settings().home / "mlflow.db").exists()


@pytest.mark.parametrize("env_id", sorted(UNUSABLE_ENVS))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_unusable_env_ids_are_answered_not_raised(
    platform_home: Path, tmp_path: Path, env_id: str, command: str
) -> None:
    result = cli(command, str(_spec(tmp_path, f"{{id: '{env_id}'}}")))
    assert_bad_input(result, "env.id", env_id, UNUSABLE_ENVS[env_id], max_lines=2)
    assert _no_run_created()


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ("{id: CartPole-v1, kwargs: {no_such_arg: 1}}", "env.kwargs"),
        ("{id: CartPole-v1, kwargs: {render_mode: human}}", "env.kwargs.render_mode"),
        ("{id: CartPole-v1, kwargs: {render_mode: ansi}}", "env.kwargs.render_mode"),
        ("{id: FrozenLake-v1, kwargs: {map_name: 9x9}}", "env.id"),
        ("{id: 'ppo_platform/GridWorld-v0', kwargs: {size: [1, 2]}}", "env"),
        ("{id: 'gymnasium.envs.classic_control:CartPoleEnv'}", "env.id"),
        ("{id: 'os:system'}", "env.id"),
    ],
)
def test_bad_env_kwargs_and_entry_points_are_bad_input(
    platform_home: Path, tmp_path: Path, env: str, fragment: str
) -> None:
    for command in ("validate", "run"):
        assert_bad_input(cli(command, str(_spec(tmp_path, env))), fragment, max_lines=3)
    assert _no_run_created()


@pytest.mark.parametrize("env_id", ["CartPole-v1", "ppo_platform/GridWorld-v0", "FrozenLake-v1"])
def test_usable_envs_still_validate(tmp_path: Path, env_id: str) -> None:
    result = cli("validate", str(_spec(tmp_path, f"{{id: '{env_id}'}}")))
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("resume", ["", " ", "\x00"])
def test_empty_or_blank_resume_is_bad_input(platform_home: Path, resume: str) -> None:
    assert_bad_input(cli("run", "--resume", resume), "--resume")


@pytest.mark.parametrize(
    "value", ["9" * 5000, "-" + "1" * 4301, "1" * 5000 + ".5", "0b" + "1" * 20000]
)
def test_huge_numbers_in_a_spec_are_bad_input(tmp_path: Path, value: str) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(f"name: t\nenv: CartPole-v1\nbudget: {{total_timesteps: {value}}}\n")
    assert_bad_input(cli("validate", str(path)), "budget.total_timesteps")


@pytest.mark.parametrize(
    ("storage", "code"),
    [
        ("file:///x", 2),
        ("nonsense", 2),
        ("mysql://u:p@127.0.0.1:1/db", 2),  # no driver installed
        ("postgresql://nohost/db", 2),  # a host that does not exist: bad input
        ("postgresql+psycopg://u:secret@nohost.invalid:5432/db", 2),
        ("postgresql+psycopg://u:secret@127.0.0.1:1/db", 3),  # resolves, does not answer
    ],
)
def test_bad_storage_is_answered_before_any_run(
    platform_home: Path, storage: str, code: int
) -> None:
    spec = Path(__file__).resolve().parents[3] / "specs" / "tune_cartpole.yaml"
    result = cli("tune", str(spec), "--storage", storage)
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) <= 2
    assert "secret" not in result.output
    assert _no_run_created()


@pytest.mark.parametrize(
    "storage",
    ["postgresql://nohost/db", "postgresql+psycopg://u:secret@no-such-host.invalid/db"],
)
def test_a_storage_host_that_does_not_exist_is_named_in_one_line(
    platform_home: Path, storage: str
) -> None:
    spec = Path(__file__).resolve().parents[3] / "specs" / "tune_cartpole.yaml"
    result = cli("tune", str(spec), "--storage", storage)
    shown = storage.replace(":secret@", ":***@")
    assert_bad_input(result, "--storage", shown, "does not exist", "Fix:", max_lines=1)
    assert "secret" not in result.output


def test_a_job_store_host_that_does_not_exist_is_bad_input() -> None:
    with pytest.raises(BadInputError) as raised:
        make_engine("postgresql+psycopg://u:secret@nohost.invalid/jobs")
    [issue] = raised.value.issues
    assert issue.path == "PPO_PLATFORM_JOBS_DATABASE_URL"
    assert "secret" not in str(issue.value)
    make_engine("postgresql+psycopg://u:secret@127.0.0.1:1/jobs")  # resolves: made, not opened
