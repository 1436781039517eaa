"""Env packages: named by the operator (setting or --env-package), imported before the registry
is read, never named by a spec."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import pytest
from env_package_fixtures import (
    INSTALLED_ENV,
    INSTALLED_MODULE,
    LOCAL_ENV,
    LOCAL_MODULE,
    LOCAL_NO_RENDER_ENV,
)
from pydantic import ValidationError
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.envs.ids import check_env_id, matching_env_ids
from ppo_platform.envs.packages import import_env_packages, imported_env_packages
from ppo_platform.errors import BadInputError, SpecError
from ppo_platform.settings import Settings, get_settings

pytestmark = pytest.mark.usefixtures("own_envs_importable")


def test_the_setting_reads_comma_separated_module_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", " my_envs, my_company.envs ,my_envs")
    assert Settings().env_packages == ("my_envs", "my_company.envs")


@pytest.mark.parametrize("bad", ["../etc", "my_envs:Env", "a b", "1abc", "pkg/mod"])
def test_the_setting_refuses_what_is_not_a_module_name(
    monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", f"ok_module,{bad}")
    with pytest.raises(ValidationError, match="is not a module name"):
        Settings()


def test_ale_py_is_imported_automatically_and_registers_atari() -> None:
    assert "ale_py" in import_env_packages(())
    assert "ALE/Pong-v5" in gymnasium.registry
    assert "ALE/Breakout-v5" in matching_env_ids("breakout")


def test_a_local_module_named_by_the_setting_registers_its_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", LOCAL_MODULE)
    get_settings.cache_clear()
    check_env_id(LOCAL_ENV)  # no error: imported before the registry was read
    assert LOCAL_MODULE in imported_env_packages()


def test_an_installed_package_named_by_the_setting_registers_its_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PPO_PLATFORM_ENV_PACKAGES", INSTALLED_MODULE)
    get_settings.cache_clear()
    assert matching_env_ids("installedcorridor") == [INSTALLED_ENV]


def test_a_package_that_cannot_be_imported_names_the_setting_and_the_fix() -> None:
    with pytest.raises(BadInputError) as caught:
        import_env_packages(["no_such_env_package_xyz"])
    issue = caught.value.issues[0]
    assert issue.path == "PPO_PLATFORM_ENV_PACKAGES"
    assert "no_such_env_package_xyz cannot be imported" in issue.message
    assert issue.fix is not None and "PYTHONPATH" in issue.fix


def test_an_unregistered_id_says_how_to_bring_your_own_env() -> None:
    with pytest.raises(SpecError) as caught:
        check_env_id("NotRegisteredAnywhere-v0")
    fix = caught.value.issues[0].fix or ""
    assert "--env-package MODULE" in fix and "PPO_PLATFORM_ENV_PACKAGES" in fix


def test_module_colon_id_is_refused_with_the_way_in(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: own\nenv: {LOCAL_MODULE}:{LOCAL_ENV}\n")
    result = CliRunner().invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2
    assert "names code to import ('module:Id')" in result.output
    assert "--env-package MODULE" in result.output


def test_env_package_option_makes_validate_accept_the_env(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: own\nenv: {INSTALLED_ENV}\n")
    result = CliRunner().invoke(app, ["validate", str(spec), "--env-package", INSTALLED_MODULE])
    assert result.exit_code == 0, result.output
    assert "ok:" in result.output


def test_env_package_option_refuses_a_path(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("name: own\nenv: CartPole-v1\n")
    result = CliRunner().invoke(app, ["validate", str(spec), "--env-package", "../evil"])
    assert result.exit_code == 2
    assert "--env-package = '../evil'" in result.output
    assert "not a module name" in result.output


def test_envs_lists_the_ids_an_env_package_registers() -> None:
    result = CliRunner().invoke(
        app, ["envs", "--contains", "corridor", "--env-package", LOCAL_MODULE]
    )
    assert result.exit_code == 0, result.output
    assert LOCAL_ENV in result.stdout.split()
    assert "CartPole-v1" not in result.stdout


def test_env_packages_named_by_option_travel_with_ray_tasks(tmp_path: Path) -> None:
    """--env-package adds to the setting in this process's environment, which is what a Ray
    task's runtime env carries (the nodes import the same packages)."""
    from ppo_platform.execution.ray_executor import forwarded_env

    spec = tmp_path / "spec.yaml"
    spec.write_text(f"name: own\nenv: {LOCAL_ENV}\n")
    result = CliRunner().invoke(app, ["validate", str(spec), "--env-package", LOCAL_MODULE])
    assert result.exit_code == 0, result.output
    assert forwarded_env()["PPO_PLATFORM_ENV_PACKAGES"] == LOCAL_MODULE


def test_an_env_without_a_render_mode_parameter_validates_and_trains(
    tmp_path: Path, platform_home: Path
) -> None:
    """Gymnasium does not require `render_mode`: an env whose constructor has none (a Box-action
    thermostat) validates and trains as plain `gymnasium.make` would build it."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"name: thermostat\nenv: {{id: {LOCAL_NO_RENDER_ENV}, n_envs: 2}}\n"
        "rollout: {n_steps: 32}\nupdate: {epochs: 1, minibatch_size: 32}\n"
        "budget: {total_timesteps: 64}\nevaluation: {every_timesteps: 0, episodes: 1}\n"
        "checkpoints: {every_timesteps: 0}\n"
    )
    packages = ["--env-package", LOCAL_MODULE]
    checked = CliRunner().invoke(app, ["validate", str(spec), *packages])
    assert checked.exit_code == 0, checked.output
    from ppo_platform.envs.factory import EnvFactory
    from ppo_platform.spec.loader import load_spec
    from ppo_platform.training.runner import run_spec

    env = EnvFactory(LOCAL_NO_RENDER_ENV, {"render_mode": None}, packages=[LOCAL_MODULE])()
    assert env.unwrapped.drift == 0.1
    assert env.render_mode is None
    result = run_spec(load_spec(spec))
    assert result.outcome == "completed" and result.timesteps >= 64
