"""Settings: reading them creates nothing, and every path is absolute once they are built."""

from __future__ import annotations

from pathlib import Path

import pytest

from ppo_platform.jobs.config import ServiceSettings
from ppo_platform.settings import Settings, get_settings


def test_reading_settings_creates_no_folder(platform_home: Path) -> None:
    assert get_settings().home == platform_home
    assert not platform_home.exists()


def test_ensure_home_creates_it(platform_home: Path) -> None:
    assert get_settings().ensure_home() == platform_home
    assert platform_home.is_dir()


def test_relative_paths_resolve_against_the_cwd_when_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(home=Path("h"), outputs_dir=Path("out"))
    assert (settings.home, settings.outputs_dir) == (tmp_path / "h", tmp_path / "out")
    monkeypatch.chdir("/")
    assert settings.tracking_uri == f"sqlite:///{tmp_path / 'h' / 'mlflow.db'}"


def test_settings_cross_a_process_boundary(platform_home: Path) -> None:
    import pickle

    assert pickle.loads(pickle.dumps(get_settings())) == get_settings()


def test_the_tuner_and_the_readiness_check_use_one_optuna_storage(tmp_path: Path) -> None:
    from ppo_platform.jobs.readiness import optuna_storage
    from ppo_platform.tuning.study import default_storage_url

    local = Settings(home=tmp_path / "h")
    expected = f"journal:{(tmp_path / 'h' / 'optuna' / 'studies.journal').resolve()}"
    assert local.optuna_storage == default_storage_url(local) == optuna_storage(local) == expected
    shared = Settings(home=tmp_path, optuna_storage_url="postgresql+psycopg://u@db/optuna")
    assert default_storage_url(shared) == optuna_storage(shared) == shared.optuna_storage_url


def test_the_two_settings_models_share_no_field() -> None:
    """`Settings` (every process) and `ServiceSettings` (the job service and API) read the same
    PPO_PLATFORM_ prefix: one variable must mean one thing, set in one place."""
    assert not set(Settings.model_fields) & set(ServiceSettings.model_fields)
