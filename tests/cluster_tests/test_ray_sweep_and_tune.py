"""A sweep and a two-worker study through the Ray executor, read back from the MLflow tracking
server and the PostgreSQL Optuna storage."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from cluster_services import Cluster

from ppo_platform.settings import get_settings
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.checkpoints import latest_checkpoint

pytestmark = pytest.mark.slow

BASE = {
    "env": {"id": "ppo_platform/GridWorld-v0", "n_envs": 2},
    "rollout": {"n_steps": 64},
    "update": {"epochs": 2, "minibatch_size": 64, "learning_rate": 1e-3},
    "budget": {"total_timesteps": 512, "seed": 0},
    "evaluation": {"every_timesteps": 256, "episodes": 1},
    "checkpoints": {"every_timesteps": 0},
}


def test_a_sweep_runs_its_members_as_ray_tasks(cluster: Cluster) -> None:
    from mlflow.tracking import MlflowClient

    from ppo_platform.sweeps import run_sweep
    from ppo_platform.tracking.queries import child_runs

    spec = validate_data(
        {"name": "ray-sweep", **BASE, "sweep": {"grid": {"update.epochs": [1, 2]}, "seeds": [0]}}
    )
    result = run_sweep(spec, workers=2, report=True)

    assert [o.status for o in result.outcomes] == ["FINISHED"] * 2
    assert all(o.pid != os.getpid() for o in result.outcomes)
    client = MlflowClient(cluster.mlflow_uri)
    parent = client.get_run(result.parent_run_id)
    assert parent.info.status == "FINISHED"
    children = child_runs(client, parent.info.experiment_id, result.parent_run_id)
    assert sorted(run.data.params["update.epochs"] for run in children) == ["1", "2"]
    assert all(run.info.status == "FINISHED" for run in children)
    assert all("eval/mean_reward" in run.data.metrics for run in children)
    # The same MLflow layout as a local run: the resolved spec and the model are artifacts.
    artifacts = {a.path for a in client.list_artifacts(children[0].info.run_id)}
    assert {"spec", "model"} <= artifacts


def test_a_two_worker_study_runs_on_ray_with_postgresql_storage(cluster: Cluster, tmp_path) -> None:
    import optuna
    from mlflow.tracking import MlflowClient
    from optuna.trial import TrialState

    from ppo_platform.tuning import run_study

    spec = validate_data(
        {
            "name": "ray-tune",
            **BASE,
            "tune": {
                "n_trials": 3,
                "seeds_per_trial": 1,
                "sampler": {"type": "random", "seed": 0},
                "pruner": {"type": "none"},
                "space": {
                    "update.learning_rate.start": {"type": "float", "low": 1e-3, "high": 3e-3}
                },
            },
        }
    )
    assert get_settings().optuna_storage_url == cluster.optuna_url
    result = run_study(
        spec, workers=2, study_name="ray-study", out_dir=tmp_path / "out", live=False
    )

    study = optuna.load_study(study_name="ray-study", storage=cluster.optuna_url)
    trials = study.get_trials()
    # Ray workers lock through the PostgreSQL storage: never a trial past the budget.
    assert len(trials) == 3
    assert all(t.state == TrialState.COMPLETE for t in trials)
    assert len({t.user_attrs["pid"] for t in trials}) == 2
    assert os.getpid() not in {t.user_attrs["pid"] for t in trials}
    client = MlflowClient(cluster.mlflow_uri)
    parent = client.get_run(result.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert result.outputs.best_spec.exists()


def test_a_sweep_member_whose_ray_worker_dies_resumes_from_its_checkpoint(
    cluster: Cluster,
) -> None:
    """The member's worker process is killed mid-training: the task comes back lost and runs
    again, continuing the same MLflow run from its last checkpoint."""
    import signal
    import threading

    from mlflow.tracking import MlflowClient

    from ppo_platform.sweeps import run_sweep
    from ppo_platform.tracking import tags as tag

    total = 16384
    spec = validate_data(
        {
            "name": "ray-sweep-lost",
            **BASE,
            "budget": {"total_timesteps": total, "seed": 0},
            "checkpoints": {"every_timesteps": 512},
            "sweep": {"grid": {"update.epochs": [1]}, "seeds": [0]},
        }
    )
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.update(result=run_sweep(spec, workers=1)))
    thread.start()
    client = MlflowClient(cluster.mlflow_uri)
    deadline = time.monotonic() + 180
    victim = None
    while victim is None and time.monotonic() < deadline and thread.is_alive():
        found = client.get_experiment_by_name("ray-sweep-lost")
        for run in client.search_runs([found.experiment_id]) if found else []:
            folder = cluster.home / "runs" / run.info.run_id / "checkpoints"
            if tag.SWEEP_KEY in run.data.tags and latest_checkpoint(folder):
                victim = run
        time.sleep(0.3)
    assert victim is not None, "the member never reached a checkpoint"
    os.kill(int(victim.data.tags[tag.WORKER_PID]), signal.SIGKILL)
    thread.join(240)
    result = outcome["result"]
    [member] = result.outcomes  # type: ignore[attr-defined]
    assert member.status == "FINISHED", member.error
    assert member.run_id == victim.info.run_id  # the same MLflow run, continued
    run = client.get_run(victim.info.run_id)
    assert run.info.status == "FINISHED"
    assert int(run.data.tags[tag.RESUMED_FROM_STEP]) >= 512


def test_ctrl_c_stops_the_running_tuning_workers_on_ray(cluster: Cluster, tmp_path) -> None:
    """Before the cancel flag, Ray ignored the cancel of a running worker: the study went on
    to its budget. Now each worker's trial is interrupted mid-training, closed, and nothing
    stays RUNNING; the study starts no further trial."""
    import signal
    import threading

    import optuna
    from mlflow.tracking import MlflowClient
    from optuna.trial import TrialState

    from ppo_platform.tuning import run_study

    total = 200_000
    spec = validate_data(
        {
            "name": "ray-tune-cancel",
            **BASE,
            "budget": {"total_timesteps": total, "seed": 0},
            "checkpoints": {"every_timesteps": 512},
            "tune": {
                "n_trials": 4,
                "seeds_per_trial": 1,
                "sampler": {"type": "random", "seed": 0},
                "pruner": {"type": "none"},
                "space": {
                    "update.learning_rate.start": {"type": "float", "low": 1e-3, "high": 3e-3}
                },
            },
        }
    )
    client = MlflowClient(cluster.mlflow_uri)
    training: list[str] = []  # the two runs seen training, each past a checkpoint

    def interrupt_when_both_train() -> None:
        """Ctrl-C once both workers' runs have saved a checkpoint; at the deadline all the
        same (the test then fails on `training`, without waiting for the whole budget)."""
        try:
            training.extend(wait_for_checkpoints(client, cluster, "ray-tune-cancel", count=2))
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C (wakes a blocked wait)

    # Ctrl-C at a terminal is handled, also when pytest itself was started with it ignored
    # (`pytest &` in a script): the test plays that terminal.
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Thread(target=interrupt_when_both_train, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            run_study(spec, workers=2, study_name="ray-cancel", out_dir=tmp_path / "o", live=False)
    finally:
        signal.signal(signal.SIGINT, saved)
    assert len(training) == 2, "the two workers never both trained to a checkpoint"
    study = optuna.load_study(study_name="ray-cancel", storage=cluster.optuna_url)
    trials = study.get_trials()
    assert len(trials) == 2 and not study.get_trials(states=(TrialState.RUNNING,))
    assert all(t.user_attrs.get("interrupted") for t in trials)
    experiment = client.get_experiment_by_name("ray-tune-cancel")
    runs = client.search_runs([experiment.experiment_id])
    assert runs and not [r for r in runs if r.info.status == "RUNNING"]
    for run_id in training:  # stopped by the interrupt, mid-training, with a checkpoint
        assert client.get_run(run_id).info.status == "KILLED"
        last = latest_checkpoint(cluster.home / "runs" / run_id / "checkpoints")
        assert last is not None and 512 <= last.timesteps < total


def wait_for_checkpoints(client: Any, cluster: Cluster, experiment: str, count: int) -> list[str]:
    """Ids of `count` runs of `experiment` RUNNING with a checkpoint saved (fewer after 300 s)."""
    deadline = time.monotonic() + 300
    found: list[str] = []
    while time.monotonic() < deadline:
        named = client.get_experiment_by_name(experiment)
        runs = client.search_runs([named.experiment_id]) if named else []
        found = [
            str(run.info.run_id)
            for run in runs
            if run.info.status == "RUNNING"
            and latest_checkpoint(cluster.home / "runs" / run.info.run_id / "checkpoints")
        ]
        if len(found) >= count:
            return found[:count]
        time.sleep(0.5)
    return found
