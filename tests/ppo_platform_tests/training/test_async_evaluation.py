"""`evaluation.async: true`: a separate process evaluates weight snapshots while training goes
on; its results equal the in-process evaluation's on the same snapshot and seed."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
from mlflow.tracking import MlflowClient

from ppo_platform.envs.build import build_eval_env, build_train_env, eval_seed
from ppo_platform.settings import get_settings
from ppo_platform.trainers.evaluation import evaluate_episodes
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training.algorithms import build_model
from ppo_platform.training.async_eval import EvalProcess
from ppo_platform.training.progress import ProgressEvent
from ppo_platform.training.runner import run_spec
from tests.ppo_platform_tests.training.test_runner import tiny_spec


def test_the_spec_field_is_spelled_async_and_off_by_default(load, minimal_spec) -> None:
    assert load(minimal_spec).evaluation.run_async is False
    spec = load(minimal_spec + "evaluation: {async: true}\n")
    assert spec.evaluation.run_async is True
    assert spec.resolved()["evaluation"]["async"] is True
    # Where evaluation runs changes no result: default specs keep their hash.
    assert load(minimal_spec + "evaluation: {async: false}\n").spec_hash() == (
        load(minimal_spec).spec_hash()
    )


def test_an_evaluation_process_equals_the_in_process_evaluation_on_one_snapshot(
    tmp_path: Path,
) -> None:
    spec = tiny_spec(evaluation__episodes=5)
    model = build_model(spec, build_train_env(spec))
    model.learn(512)
    snapshot = tmp_path / "snapshot.zip"
    model.save(snapshot)
    here = evaluate_episodes(
        model, build_eval_env(spec), 5, spec.evaluation.deterministic, eval_seed(spec)
    )
    worker = EvalProcess(spec)
    try:
        worker.submit(512, snapshot, None)
        answer = worker.next_answer(wait=True)
    finally:
        worker.close()
    assert answer == {"step": 512, "mean": float(np.mean(here)), "std": float(np.std(here))}
    assert not snapshot.exists()  # the evaluation process removes what it evaluated


def _eval_history(run_id: str) -> list[tuple[int, float]]:
    client = MlflowClient(get_settings().tracking_uri)
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, "eval/mean_reward"))


@pytest.mark.slow
def test_an_async_run_logs_the_same_evaluations_at_the_snapshot_steps(shared_home: Path) -> None:
    normalized = {"env__normalize__obs": True}
    in_process = run_spec(tiny_spec(**normalized))
    asynchronous = run_spec(tiny_spec(**normalized, evaluation__async=True))
    expected = _eval_history(in_process.run_id)
    assert [step for step, _ in expected] == [1024, 2048]
    assert _eval_history(asynchronous.run_id) == expected
    assert asynchronous.final_eval_mean == in_process.final_eval_mean
    assert asynchronous.status == "FINISHED"


def _eval_worker_pid() -> int:
    """This process's evaluation process (`execution.child.spawn_child`: a direct child)."""
    me = os.getpid()
    for task in Path(f"/proc/{me}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"eval_worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    raise AssertionError("no evaluation process")


def test_a_cancelled_async_run_does_not_wait_for_its_queued_evaluations(shared_home: Path) -> None:
    cancel, stopped = threading.Event(), []
    timers: list[threading.Timer] = []

    def stop_the_evaluator_then_cancel(event: ProgressEvent) -> None:
        if event.kind != "update":
            return
        if not stopped:  # the evaluation at 512 is queued to a process that cannot answer
            stopped.append(_eval_worker_pid())
            os.kill(stopped[0], signal.SIGSTOP)
            # Were the run to wait for it, it would get its answer after this and log it.
            timers.append(threading.Timer(30, os.kill, (stopped[0], signal.SIGCONT)))
            timers[0].start()
        elif event.timesteps >= 512:
            cancel.set()

    spec = tiny_spec(evaluation__async=True, evaluation__every_timesteps=256)
    try:
        result = run_spec(spec, cancel=cancel, on_progress=stop_the_evaluator_then_cancel)
    finally:
        timers[0].cancel()
    assert result.outcome == "cancelled" and result.timesteps == 512
    assert 512 not in [step for step, _ in _eval_history(result.run_id)]  # dropped, not awaited
    run_dir = get_settings().runs_dir / result.run_id
    assert ckpt.model_path(run_dir / "checkpoints", 512).exists()
    assert not Path(f"/proc/{stopped[0]}").exists()  # killed and reaped
