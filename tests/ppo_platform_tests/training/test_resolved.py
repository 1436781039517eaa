"""A run records what it resolved when it started: the vectorization `auto` chose and why, the
env packages with versions, library versions, the device and the torch threads; as MLflow tags,
as resolved.json in the run folder, and on the console."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from ppo_platform.envs.vectorization import resolve
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.progress import PlainReporter, ProgressEvent
from ppo_platform.training.runner import run_spec

pytestmark = pytest.mark.slow  # one real training run

ACROBOT = {
    "name": "resolved-acrobot",
    "env": {"id": "Acrobot-v1", "n_envs": 2},
    "rollout": {"n_steps": 32},
    "update": {"epochs": 1, "minibatch_size": 32},
    "budget": {"total_timesteps": 64},
    "evaluation": {"every_timesteps": 0, "episodes": 1},
    "checkpoints": {"every_timesteps": 0},
}


def test_a_run_records_what_it_resolved(
    platform_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import mlflow
    import torch

    from ppo_platform.settings import get_settings

    spec = validate_data(ACROBOT)
    events: list[ProgressEvent] = []
    reporter = PlainReporter()

    def both(event: ProgressEvent) -> None:
        events.append(event)
        reporter(event)

    result = run_spec(spec, on_progress=both)
    run = mlflow.MlflowClient(get_settings().tracking_uri).get_run(result.run_id)
    tags = {
        k.removeprefix("ppo_platform.resolved."): v
        for k, v in run.data.tags.items()
        if k.startswith("ppo_platform.resolved.")
    }
    assert tags["vectorization"] == resolve(spec) and tags["vectorization_reason"].startswith(
        "auto: "
    )
    assert tags["device"] == "cpu" and tags["torch_threads"] == str(torch.get_num_threads())
    assert tags["version.stable-baselines3"] == metadata.version("stable-baselines3")
    assert tags["version.gymnasium"] == metadata.version("gymnasium")
    assert tags["version.torch"] == metadata.version("torch")
    assert tags["env_packages"].startswith("ale_py " + metadata.version("ale-py"))
    saved = json.loads((get_settings().runs_dir / result.run_id / "resolved.json").read_text())
    assert saved == tags
    [started] = [e for e in events if e.kind == "started"]
    assert started.resolved == tags
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("resolved: "))
    assert f"{tags['vectorization']} envs ({tags['vectorization_reason']})" in line
    assert "device cpu" in line and "stable-baselines3 " in line
