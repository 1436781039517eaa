"""An asynchronous evaluation has one step everywhere: the console line, the progress event (what
REST stores) and the MLflow metric all carry the step of the snapshot it evaluated."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.progress import PlainReporter, ProgressEvent
from ppo_platform.training.runner import run_spec

pytestmark = pytest.mark.slow  # one real training run with an evaluation process

ACROBOT = {
    "name": "async-steps",
    "env": {"id": "Acrobot-v1", "n_envs": 2},
    "rollout": {"n_steps": 64},
    "update": {"epochs": 1, "minibatch_size": 64},
    "budget": {"total_timesteps": 1024},
    "evaluation": {"every_timesteps": 256, "episodes": 1, "async": True},
    "checkpoints": {"every_timesteps": 0},
}


def test_an_async_evaluation_has_one_step_everywhere(
    shared_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events: list[ProgressEvent] = []
    reporter = PlainReporter(every_seconds=3600)

    def both(event: ProgressEvent) -> None:
        events.append(event)
        reporter(event)

    result = run_spec(validate_data(ACROBOT), on_progress=both)
    client = mlflow.MlflowClient(get_settings().tracking_uri)
    logged = sorted(m.step for m in client.get_metric_history(result.run_id, "eval/mean_reward"))
    reported = [e.timesteps for e in events if e.kind == "eval"]
    printed = [
        int(line.split()[2].rstrip(":"))
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("eval  step ")
    ]
    assert logged == [256, 512, 768, 1024]
    assert reported == printed == logged
