"""Held-out verification as typed events, and a resumed study that does not re-verify."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.settings import Settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tuning import run_study
from ppo_platform.tuning.events import StudyEvent, TrialVerified, VerifyStarted


@pytest.mark.slow
def test_a_resumed_study_reuses_its_held_out_results_and_says_so(
    home: Settings, tiny_spec: Callable[..., ExperimentSpec], tmp_path: Path
) -> None:
    spec = tiny_spec(
        **{
            "budget.total_timesteps": 256,
            "evaluation.every_timesteps": 128,
            "rollout.n_steps": 32,
            "tune.n_trials": 2,
            "tune.verify": {"seeds": [9], "top_trials": 1, "episodes": 2},
        }
    )
    first: list[StudyEvent] = []
    result = run_study(
        spec, study_name="again", out_dir=tmp_path / "a", live=False, on_event=first.append
    )
    started = [e for e in first if isinstance(e, VerifyStarted)]
    verified = [e for e in first if isinstance(e, TrialVerified)]
    assert len(started) == 1 and started[0].seeds == (9,) and started[0].reused == ()
    assert len(verified) == 1 and not verified[0].reused
    assert verified[0].held_out_value is not None and verified[0].run_id
    assert verified[0].number == result.outputs.best_trial

    again: list[StudyEvent] = []
    run_study(spec, study_name="again", out_dir=tmp_path / "b", live=False, on_event=again.append)
    reused = [e for e in again if isinstance(e, TrialVerified)]
    assert [e.reused for e in reused] == [True]
    assert reused[0].held_out_value == verified[0].held_out_value
    assert reused[0].run_id == verified[0].run_id
    client = MlflowClient(home.tracking_uri)
    experiment = client.get_run(result.parent_run_id).info.experiment_id
    runs = client.search_runs([experiment], filter_string=f"tags.`{tag.KIND}` = 'verify'")
    assert len(runs) == 1  # verified once, not twice
