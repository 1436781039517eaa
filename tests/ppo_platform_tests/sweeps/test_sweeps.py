"""Sweeps: grid expansion and validation, parallel child runs, failures, resume."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppo_platform.cli import app
from ppo_platform.errors import SpecError
from ppo_platform.execution.base import Task
from ppo_platform.execution.local import LocalExecutor
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import SAFE_NAME_PATTERN
from ppo_platform.sweeps import expand_sweep, run_sweep
from ppo_platform.sweeps.events import MemberFinished, SweepStarted
from ppo_platform.tracing import TRACE_ENV
from ppo_platform.tracking.queries import child_runs
from ppo_platform.tracking.tags import FAILURE as FAILURE_TAG
from ppo_platform.tracking.tags import GRID_POINT as POINT_TAG
from ppo_platform.tracking.tags import SEED as SEED_TAG
from ppo_platform.tracking.tags import SWEEP_KEY as KEY_TAG
from ppo_platform.tracking.tags import WORKER_PID as WORKER_PID_TAG
from ppo_platform.training.runner import run_spec

REPO = Path(__file__).resolve().parents[3]

# A GridWorld run of 512 env steps (two updates): about a second of training per member.
TINY = """\
name: tiny
env: {id: ppo_platform/GridWorld-v0, n_envs: 4}
rollout: {n_steps: 64}
update: {epochs: 4, minibatch_size: 64, learning_rate: 1.0e-3}
budget: {total_timesteps: 512}
evaluation: {every_timesteps: 256, episodes: 1}
checkpoints: {every_timesteps: 0}
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PPO_PLATFORM_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    get_settings.cache_clear()
    yield tmp_path / "home"
    get_settings.cache_clear()


def children(parent_run_id: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(get_settings().tracking_uri)
    parent = client.get_run(parent_run_id)
    return child_runs(client, parent.info.experiment_id, parent_run_id)


# ---- expansion and validation (no training) -------------------------------------------------


_TINY_SWEEP = TINY + "sweep: {grid: {update.epochs: [1, 4]}, seeds: [0, 1]}\n"
_SWEEP_TAIL = "sweep: {grid: {update.epochs: [1, 4]}}\n"
_EXPAND_LIGHTLY = f"""
from ppo_platform.spec.loader import load_spec_text
from ppo_platform.sweeps import expand_sweep
assert len(expand_sweep(load_spec_text({_TINY_SWEEP!r}, "tiny.yaml"))) == 4
"""


def test_expanding_a_sweep_imports_no_torch_sb3_mlflow_or_optuna(heavy_imports_of):
    # The API validates a submitted sweep by expanding it, in its own light process.
    assert heavy_imports_of(_EXPAND_LIGHTLY) == []


def test_grid_paths_cross_with_each_other_and_the_seeds(load):
    spec = load(
        TINY + "sweep:\n  grid: {update.epochs: [1, 4], surrogate.clip_epsilon.start: "
        "[0.1, 0.2]}\n  seeds: [0, 7]\n"
    )
    members = expand_sweep(spec)
    assert len(members) == 8
    got = {
        (m.spec.update.epochs, m.spec.surrogate.clip_epsilon.start, m.spec.budget.seed)
        for m in members
    }
    assert got == {(k, eps, seed) for k in (1, 4) for eps in (0.1, 0.2) for seed in (0, 7)}


def test_members_are_full_specs_without_the_sweep_section_in_the_sweeps_experiment(load):
    spec = load(TINY + "sweep:\n  grid: {update.epochs: [1, 4]}\n")
    for member in expand_sweep(spec):
        assert member.spec.sweep is None
        assert member.spec.experiment_name == "tiny"
        assert member.spec.env.id == "ppo_platform/GridWorld-v0"  # the base's fields are kept
        assert member.spec.update.learning_rate.start == 1e-3


def test_a_resolved_sweep_spec_expands_with_aliased_fields_kept(load):
    # The job service stores the resolved spec (every field, `evaluation.async` by its alias)
    # and expands that: the members must keep the alias and its value.
    import yaml

    from ppo_platform.spec.loader import load_spec_text

    spec = load(TINY.replace("episodes: 1}", "episodes: 1, async: true}") + _SWEEP_TAIL)
    resolved = load_spec_text(yaml.safe_dump(spec.resolved()), "resolved.yaml")
    members = expand_sweep(resolved)
    assert [m.spec.evaluation.run_async for m in members] == [True, True]
    assert [m.spec.update.epochs for m in members] == [1, 4]


def test_an_unknown_key_lists_the_keys_as_written_in_yaml(single_issue):
    issue = single_issue(TINY.replace("episodes: 1}", "episodes: 1, run_async: true}"))
    assert issue.message == "unknown key."
    assert "async" in issue.fix and "run_async" not in issue.fix


def test_member_names_are_unique_safe_identifiers(load):
    spec = load(
        TINY + "sweep:\n  grid: {update.learning_rate: [1.0e-3, 3.0e-4], "
        "policy.net_arch: [[64, 64], [32]], policy.activation: [tanh, relu]}\n"
        "  seeds: [0, 1]\n"
    )
    names = [member.spec.name for member in expand_sweep(spec)]
    assert len(set(names)) == len(names) == 16
    assert all(re.fullmatch(SAFE_NAME_PATTERN, name) for name in names)
    assert "tiny-learning_rate0.001-net_arch64x64-tanh-s0" in names


def test_variants_set_several_fields_together(load):
    spec = load(
        TINY.replace("epochs: 4, minibatch_size: 64, ", "")
        + "sweep:\n  variants:\n    - {algorithm: ppo, update.epochs: 4}\n"
        "    - {algorithm: a2c}\n  seeds: [0, 1]\n"
    )
    members = expand_sweep(spec)
    assert [(m.spec.algorithm, m.spec.update.epochs) for m in members] == [
        ("ppo", 4),
        ("ppo", 4),
        ("a2c", 10),
        ("a2c", 10),
    ]
    assert members[0].point.label == "algorithm=ppo, update.epochs=4"


def test_member_keys_are_stable_and_distinct(load):
    text = TINY + "sweep:\n  grid: {update.epochs: [1, 4]}\n  seeds: [0, 1]\n"
    first = [member.key for member in expand_sweep(load(text))]
    again = [member.key for member in expand_sweep(load(text))]
    assert first == again
    assert len(set(first)) == 4


def test_a_refused_grid_point_refuses_the_sweep_naming_the_point_and_the_rule(load):
    spec = load(TINY + "sweep:\n  grid: {update.epochs: [4, 31]}\n  seeds: [0, 1]\n")
    with pytest.raises(SpecError) as caught:
        expand_sweep(spec)
    [issue] = caught.value.issues  # named once, not once per seed
    assert caught.value.refused
    assert issue.path == "update.epochs"
    assert issue.value == 31
    assert "above the limit of 30" in issue.message
    assert "grid point update.epochs=31" in issue.message


def test_a_grid_value_the_schema_rejects_refuses_the_sweep(load):
    spec = load(TINY + "sweep:\n  grid: {update.minibatch_size: [64, 0]}\n")
    with pytest.raises(SpecError) as caught:
        expand_sweep(spec)
    [issue] = caught.value.issues
    assert issue.path == "update.minibatch_size"
    assert "grid point update.minibatch_size=0" in issue.message


def test_a_grid_over_the_seed_is_refused_in_favour_of_sweep_seeds(load):
    spec = load(TINY + "sweep:\n  grid: {budget.seed: [0, 1]}\n")
    with pytest.raises(SpecError) as caught:
        expand_sweep(spec)
    assert caught.value.issues[0].path == "sweep.grid.budget.seed"
    assert "sweep.seeds" in caught.value.issues[0].fix


def test_a_spec_without_a_sweep_section_is_refused(load):
    with pytest.raises(SpecError) as caught:
        expand_sweep(load(TINY))
    assert caught.value.issues[0].path == "sweep"


def test_a_refused_sweep_creates_no_run_at_all(home, load):
    spec = load(TINY + "sweep:\n  grid: {update.epochs: [4, 31]}\n")
    with pytest.raises(SpecError):
        run_sweep(spec, workers=2)
    assert not (home / "mlflow.db").exists()  # not even the tracking store was touched


def test_the_sweep_command_exits_2_on_a_refused_grid_point(home, write_spec):
    path = write_spec(TINY + "sweep:\n  grid: {update.epochs: [4, 31]}\n")
    result = CliRunner().invoke(app, ["sweep", str(path), "--workers", "1"])
    assert result.exit_code == 2
    assert "refused" in result.output
    assert "update.epochs=31" in result.output


# ---- running (real processes, real MLflow) --------------------------------------------------


@pytest.mark.slow
def test_members_train_in_parallel_processes_as_child_runs_of_one_parent(home, load):
    # Long enough (~2k env steps each) that both workers are up before the first run ends.
    spec = load(TINY + "sweep:\n  seeds: [0, 1]\n", ["budget.total_timesteps=2048"])
    result = run_sweep(spec, workers=2, report=False)
    runs = children(result.parent_run_id)
    assert len(runs) == 2
    assert all(run.data.tags["mlflow.parentRunId"] == result.parent_run_id for run in runs)
    assert {run.data.tags[SEED_TAG] for run in runs} == {"0", "1"}
    assert all(run.info.status == "FINISHED" for run in runs)
    pids = {run.data.tags[WORKER_PID_TAG] for run in runs}
    assert len(pids) == 2 and str(os.getpid()) not in pids
    first, second = runs
    assert first.info.start_time < second.info.end_time
    assert second.info.start_time < first.info.end_time  # the two trainings overlapped


@pytest.mark.slow
def test_a_failing_member_is_recorded_and_does_not_stop_the_others(home, load):
    spec = load(
        TINY + "sweep:\n  variants:\n    - {env.kwargs.size: 4}\n"
        "    - {env.kwargs.size: 1}\n"  # the env constructor raises: no run yet
        "    - {env.kwargs.step_penalty: broken}\n"
    )  # env.step raises mid-training
    events: list = []
    result = run_sweep(spec, workers=2, report=False, on_event=events.append)
    statuses = {o.member.point.label: o.status for o in result.outcomes}
    assert statuses == {
        "env.kwargs.size=4": "FINISHED",
        "env.kwargs.size=1": "FAILED",
        "env.kwargs.step_penalty=broken": "FAILED",
    }
    errors = {o.member.point.label: o.error for o in result.failed}
    assert "size must be >= 2" in errors["env.kwargs.size=1"]
    assert "could not convert string to float" in errors["env.kwargs.step_penalty=broken"]
    runs = {run.data.tags[POINT_TAG]: run for run in children(result.parent_run_id)}
    assert runs["env.kwargs.size=4"].info.status == "FINISHED"
    for label in ("env.kwargs.size=1", "env.kwargs.step_penalty=broken"):
        assert runs[label].info.status == "FAILED"
    # The env check refuses size=1 as bad input (SpecError) before training; step_penalty
    # breaks mid-training (ValueError).
    assert runs["env.kwargs.size=1"].data.tags[FAILURE_TAG].startswith("SpecError")
    assert runs["env.kwargs.step_penalty=broken"].data.tags[FAILURE_TAG].startswith("ValueError")
    assert {o.run_id for o in result.failed} == {runs[label].info.run_id for label in errors}
    # The same ids reached the caller as data while the sweep ran, with the parent's first.
    started, *finished = events
    assert isinstance(started, SweepStarted)
    assert started.parent_run_id == result.parent_run_id
    assert all(isinstance(event, MemberFinished) for event in finished)
    assert sorted(e.outcome.run_id for e in finished) == sorted(o.run_id for o in result.outcomes)
    assert [e.runs_done for e in finished] == [1, 2, 3]


@pytest.mark.slow
def test_rerunning_an_interrupted_sweep_trains_only_the_unfinished_members(home, load):
    from mlflow.tracking import MlflowClient

    spec = load(TINY + "sweep:\n  seeds: [0, 1]\n")
    first = run_sweep(spec, workers=2, report=False)
    kept, killed = first.outcomes
    client = MlflowClient(get_settings().tracking_uri)
    # What an interrupted sweep leaves behind: the parent and one member not FINISHED.
    client.set_terminated(killed.run_id, "KILLED")
    client.set_terminated(first.parent_run_id, "KILLED")

    second = run_sweep(spec, workers=2, report=False)

    assert second.parent_run_id == first.parent_run_id and second.resumed
    assert [o.skipped for o in second.outcomes] == [True, False]
    assert second.outcomes[0].run_id == kept.run_id
    assert second.outcomes[1].status == "FINISHED"
    assert second.outcomes[1].run_id != killed.run_id
    by_key: dict[str, list] = {}
    for run in children(first.parent_run_id):
        by_key.setdefault(run.data.tags[KEY_TAG], []).append(run)
    assert len(by_key[kept.member.key]) == 1  # the finished member was not trained again
    assert len(by_key[killed.member.key]) == 2
    assert client.get_run(first.parent_run_id).info.status == "FINISHED"


# ---- warm workers ---------------------------------------------------------------------------


def _trace_marks(stderr: str) -> list[tuple[str, str]]:
    """(pid, label) of each time mark (`ppo_platform/tracing.py`) in `stderr`."""
    lines = [line.split(" ", 4) for line in stderr.splitlines() if line.startswith("trace ")]
    return [(fields[2], fields[4].split("\t")[0]) for fields in lines]


@pytest.mark.slow
def test_warm_workers_share_the_sweeps_one_tracking_process(home, write_spec):
    path = write_spec(TINY + "sweep:\n  seeds: [0, 1, 2]\n")
    env = {**os.environ, "PPO_PLATFORM_HOME": str(home), TRACE_ENV: "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "platform"), str(REPO)])
    command = [sys.executable, "-m", "ppo_platform.cli", "sweep", str(path), "--workers", "2"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    marks = _trace_marks(done.stderr)
    # One tracking process for the whole sweep: MLflow imported and the store opened once.
    assert len({pid for pid, label in marks if label.startswith("tracking:")}) == 1
    workers = {
        pid
        for pid, label in marks
        if label == "tracking client: connected to the shared tracking process"
    }
    assert len(workers) == 2
    parent_run_id = re.search(r"parent run ([0-9a-f]{32})$", done.stdout.strip())[1]
    runs = children(parent_run_id)
    assert [run.info.status for run in runs] == ["FINISHED"] * 3
    trained_by = [run.data.tags[WORKER_PID_TAG] for run in runs]
    assert set(trained_by) <= workers
    assert max(trained_by.count(pid) for pid in workers) >= 2  # a worker served two members


@pytest.mark.slow
def test_a_member_on_a_warm_worker_trains_exactly_as_in_a_cold_process(home, load):
    from mlflow.tracking import MlflowClient

    spec = load(TINY + "sweep:\n  seeds: [0, 1]\n")
    # One worker: warmed up on the first member's spec, it trains seed 0, then seed 1.
    second = run_sweep(spec, workers=1, report=False).outcomes[1]
    with LocalExecutor(1) as cold:  # a fresh worker: no warm-up, its own tracking process
        (alone,) = cold.map_tasks([Task("cold", run_spec, (second.member.spec,))])
    assert alone.ok, alone.error
    assert second.final_eval_mean == alone.value.final_eval_mean
    client = MlflowClient(get_settings().tracking_uri)
    for key in ("eval/mean_reward", "train/approx_kl", "train/value_loss", "train/loss"):
        warm, cold_history = (
            sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))
            for run_id in (second.run_id, alone.value.run_id)
        )
        assert warm and warm == cold_history, key
