"""A two-worker study on a PostgreSQL storage: a throwaway server in a temp dir, a free port.

Skipped (with the reason) when the PostgreSQL server binaries or psycopg are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.study import open_storage

pytestmark = pytest.mark.slow


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    return postgres_server


def test_two_workers_share_a_postgresql_study(
    home: Settings, postgres_url: str, tiny_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    result = run_study(
        tiny_spec(**{"tune.n_trials": 4}),
        workers=2,
        storage=postgres_url,
        study_name="pg",
        out_dir=tmp_path / "out",
        live=False,
    )
    study = optuna.load_study(study_name="pg", storage=open_storage(postgres_url))
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    assert len({t.user_attrs["pid"] for t in trials}) == 2
    assert result.storage == postgres_url  # no password in this URL: nothing to redact
    assert result.outputs.best_spec.exists()
