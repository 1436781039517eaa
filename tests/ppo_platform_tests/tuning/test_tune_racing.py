"""Racing over seeds: a trial in the top fraction of its rung earns more seeds; the others
stop (pruned, `raced out`) with their env steps counted."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import optuna
import pytest

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tuning import run_study
from ppo_platform.tuning.objective import PruningReporter
from ppo_platform.tuning.racing import RACE_ATTR, is_rung, race
from tests.ppo_platform_tests.tuning.conftest import make_spec

RACING = {"tune.racing": {"seeds_max": 4, "reduction_factor": 2, "n_startup_trials": 2}}


def test_rungs_grow_by_the_reduction_factor_up_to_seeds_max() -> None:
    spec = make_spec(**{"tune.racing": {"seeds_max": 10, "reduction_factor": 3}})
    assert spec.tune is not None
    assert spec.tune.rungs() == [1, 3, 9, 10]
    assert [n for n in range(1, 11) if is_rung(spec.tune, n)] == [1, 3, 9]  # never the last


def test_a_trial_earns_more_seeds_only_in_the_top_fraction_after_the_startup(
    tmp_path: Path,
) -> None:
    spec = make_spec(**RACING)
    assert spec.tune is not None
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "race.journal"))
    )
    study = optuna.create_study(storage=storage, direction="maximize")
    decisions = []
    for score in [100.0, 50.0, 80.0, 20.0, 90.0]:
        trial = study.ask()
        decisions.append(race(trial, spec.tune, 1, score))
        study.tell(trial, score)
    assert [d.promoted for d in decisions] == [True, True, False, False, True]  # 2 startup
    assert (decisions[2].rank, decisions[2].field, decisions[2].kept) == (2, 3, 1)
    assert (decisions[3].rank, decisions[3].field, decisions[3].kept) == (4, 4, 2)
    assert (decisions[4].rank, decisions[4].field, decisions[4].kept) == (2, 5, 2)
    assert study.trials[3].user_attrs[RACE_ATTR] == {"1": 20.0}


@pytest.mark.slow
def test_a_racing_study_counts_every_seed_it_ran_and_completes_only_full_trials(
    home: Settings, three_trial_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    spec = three_trial_spec(
        **{"tune.racing": {"seeds_max": 2, "reduction_factor": 2, "n_startup_trials": 1}}
    )
    result = run_study(spec, study_name="race", out_dir=tmp_path / "out", live=False)
    summary = json.loads(result.outputs.summary_json.read_text())
    for trial in summary["trials"]:
        if trial["state"] == "COMPLETE":
            assert len(trial["seed_values"]) == 2 and trial["timesteps"] == 2 * 512
        else:
            assert trial["raced_out"] == 1 and trial["timesteps"] == 512
            assert "raced out after 1 seed(s)" in trial["reason"]
    assert summary["env_steps_search"] == sum(t["timesteps"] for t in summary["trials"])
    assert summary["racing"]["seeds_max"] == 2
    markdown = result.outputs.summary.read_text()
    assert "racing over seeds: 1 -> 2 seeds" in markdown
    assert "pruner: none" in markdown


def test_the_pruner_acts_on_the_first_rung_only_racing_judges_the_rest(tmp_path: Path) -> None:
    spec = make_spec(**RACING)
    assert spec.tune is not None
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(tmp_path / "prune.journal"))
    )
    trial = optuna.create_study(storage=storage).ask()
    first, second = (
        PruningReporter(trial, spec, spec.tune, index, [], threading.Event()) for index in (0, 1)
    )
    assert first.may_prune and not second.may_prune
    plain = make_spec()
    assert plain.tune is not None
    assert PruningReporter(trial, plain, plain.tune, 1, [], threading.Event()).may_prune
