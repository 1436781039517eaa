"""MLflow is imported only by the tracking process: a process that trains a run, runs a trial
of a study, runs a job (a training or a sweep) or is a sweep's warm worker writes every run
through its tracking process and never loads MLflow (importing it costs 1.5-3 s and its store
writes 10-15 ms each, off the training loop)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """
import sys
from pathlib import Path

from ppo_platform.execution.local import LocalExecutor

from ppo_platform.execution.base import Task
from ppo_platform.jobs import JobStore, prepare_submission
from ppo_platform.jobs.worker import run_job
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps.runs import warm_worker
from ppo_platform.training.runner import run_spec
from ppo_platform.tuning import run_study

SPEC = '''name: quiet
env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 1, minibatch_size: 64}
budget: {total_timesteps: 128}
evaluation: {every_timesteps: 0, episodes: 1}
checkpoints: {every_timesteps: 0}
'''
TUNE = SPEC + '''tune:
  n_trials: 1
  seeds_per_trial: 1
  pruner: {type: none}
  space:
    update.epochs: {type: int, low: 1, high: 2}
'''
SWEEP = SPEC + 'sweep: {seeds: [0, 1]}' + chr(10)
home = Path(sys.argv[1])
result = run_spec(load_spec_text(SPEC, "quiet.yaml"))
print("training", result.outcome, "mlflow" in sys.modules, flush=True)
study = run_study(load_spec_text(TUNE, "tune.yaml"), workers=1, out_dir=home / "tune", live=False)
print("trial", study.outputs.best_trial, "mlflow" in sys.modules, flush=True)
url = f"sqlite:///{home / 'jobs.db'}"
store = JobStore(url, home)
job_id = store.submit("alice", prepare_submission(SPEC, 10**6), None, 10)[0].id
store.mark_running(job_id)
print("job", run_job(job_id, url), "mlflow" in sys.modules, flush=True)
print("tracking writes:", store.get(job_id).mlflow_run_id is not None, flush=True)
sweep_id = store.submit("alice", prepare_submission(SWEEP, 10**6), None, 10)[0].id
store.mark_running(sweep_id)
print("sweep job", run_job(sweep_id, url), "mlflow" in sys.modules, flush=True)
spec = load_spec_text(SPEC, "quiet.yaml")
probe = Task("probe", eval, ("'mlflow' in __import__('sys').modules",))
with LocalExecutor(1, initializer=warm_worker, initargs=(spec,)) as pool:  # as a sweep's
    done = {r.key: r for r in pool.map_tasks([Task("member", run_spec, (spec,)), probe])}
print("sweep worker", done["member"].ok, done["probe"].value, flush=True)
"""


@pytest.mark.slow
def test_training_trial_job_and_sweep_worker_processes_never_import_mlflow(
    platform_home: Path, tmp_path: Path
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    heads = ("training ", "trial ", "job ", "tracking writes", "sweep ")
    lines = [line for line in done.stdout.splitlines() if line.startswith(heads)]
    assert lines == [
        "training completed False",
        "trial 0 False",
        "job succeeded False",
        "tracking writes: True",
        "sweep job succeeded False",
        "sweep worker True False",
    ], done.stdout + done.stderr[-3000:]
