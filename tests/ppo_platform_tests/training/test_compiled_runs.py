"""The compiled path from a spec: `compiled: on` trains each seed as an MLflow run of its own
(under one parent with --seeds), its agent a plain SB3 PPO; `auto` says why it fell back; `on`
refuses what it cannot run. Real MLflow store, real CLI processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient
from stable_baselines3 import PPO

from ppo_platform.errors import Terminated, TrainingError
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.training.checkpoints import latest_checkpoint
from ppo_platform.training.compiled_path import compiled_problem, training_path
from ppo_platform.workloads import run_experiment
from tests.ppo_platform_tests.training.test_runner import sigterm_mid_first_save


def _spec(**changes) -> ExperimentSpec:
    data = {
        "name": "compiled-cartpole",
        "env": {"id": "CartPole-v1", "n_envs": 4},
        "compiled": "on",
        "rollout": {"n_steps": 32},
        "update": {"epochs": 4, "minibatch_size": 64, "learning_rate": 1e-3},
        "budget": {"total_timesteps": 128 * 12, "seed": 3},
        "evaluation": {"every_timesteps": 512, "episodes": 3},
        "checkpoints": {"every_timesteps": 1024, "keep_last": 2},
        **changes,
    }
    return ExperimentSpec.model_validate(data)


def test_a_compiled_run_logs_every_update_evaluates_checkpoints_and_saves_an_sb3_agent(
    platform_home,
):
    result = run_experiment(_spec())
    assert result.outcome == "completed" and result.timesteps == 128 * 12
    client = MlflowClient(get_settings().tracking_uri)
    run = client.get_run(result.run_id)
    assert run.data.tags[tag.TRAINING_PATH] == "compiled"
    assert run.data.params["budget.seed"] == "3"
    kl = client.get_metric_history(result.run_id, "train/approx_kl")
    assert [m.step for m in kl] == [128 * (i + 1) for i in range(12)]
    assert all(m.value > 0 for m in kl)
    evals = client.get_metric_history(result.run_id, "eval/mean_reward")
    assert [m.step for m in evals] == [512, 1024, 1536]  # at the update boundaries due
    assert result.final_eval_mean == pytest.approx(evals[-1].value)
    run_dir = platform_home / "runs" / result.run_id
    checkpoints = sorted(p.name for p in (run_dir / "checkpoints").glob("*.zip"))
    assert checkpoints and all(name.endswith(".zip") for name in checkpoints)
    agent = PPO.load(sorted((run_dir / "checkpoints").glob("*.zip"))[-1], device="cpu")
    assert type(agent) is PPO  # a plain stable-baselines3 model, Adam state included
    assert agent.policy.optimizer.state  # the optimiser's moments came along


def test_auto_names_why_the_torch_path_runs_and_on_refuses_with_the_reason():
    a2c = _spec(algorithm="a2c", compiled="auto")
    assert "algorithm a2c" in compiled_problem(a2c)
    path = training_path(a2c)
    assert path["training_path"] == "torch"
    assert path["training_path_reason"].startswith("compiled: auto, but algorithm a2c")
    with pytest.raises(TrainingError, match="env Pendulum-v1 has no JAX port"):
        training_path(_spec(env={"id": "Pendulum-v1"}))
    assert training_path(_spec())["training_path"] == "compiled"
    assert training_path(_spec(compiled="off"))["training_path_reason"] == "compiled: off"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_validate_and_run_refuse_compiled_on_that_cannot_run_with_exit_2(
    platform_home, tmp_path, command
):
    spec = tmp_path / "pendulum.yaml"
    spec.write_text("name: p\nenv: Pendulum-v1\ncompiled: 'on'\nbudget: {total_timesteps: 4096}\n")
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", command, str(spec)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "compiled = 'on': the compiled path cannot run this spec: env Pendulum-v1" in done.stderr
    assert "Fix: set compiled: auto" in done.stderr
    assert not (platform_home / "runs").exists()


def test_a_bad_setting_exits_2_naming_the_variable_and_its_value(platform_home):
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "run", "specs/cartpole.yaml"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PPO_PLATFORM_COMPILED_THREADS": "-1"},
    )
    assert done.returncode == 2, done.stderr
    assert "PPO_PLATFORM_COMPILED_THREADS = '-1': Input should be greater than or equal to 0" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr


def test_the_path_is_not_a_hyperparameter_the_spec_hash_stays():
    assert _spec(compiled="on").spec_hash() == _spec(compiled="off").spec_hash()


def test_run_seeds_trains_each_seed_as_a_run_under_one_parent(platform_home, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: seeds-cartpole\nenv: {id: CartPole-v1, n_envs: 4}\ncompiled: 'on'\n"
        "rollout: {n_steps: 32}\nupdate: {epochs: 4, minibatch_size: 64}\n"
        "budget: {total_timesteps: 1024}\nevaluation: {every_timesteps: 0, episodes: 2}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), "--seeds", "4,1-2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 of 3 seeds ended (compiled path)" in done.stdout
    client = MlflowClient(get_settings().tracking_uri)
    experiment = client.get_experiment_by_name("seeds-cartpole")
    runs = client.search_runs([experiment.experiment_id])
    parents = [r for r in runs if r.data.tags.get(tag.KIND) == "seeds"]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    children = [r for r in runs if r.data.tags.get(tag.PARENT_RUN_ID) == parents[0].info.run_id]
    assert sorted(r.data.params["budget.seed"] for r in children) == ["1", "2", "4"]
    assert all(r.info.status == "FINISHED" for r in children)
    assert all("eval/mean_reward" in r.data.metrics for r in children)
    # Each seed's plot was drawn after its close was answered, before the command ended.
    for child in children:
        assert [a.path for a in client.list_artifacts(child.info.run_id, "plots")] == [
            "plots/training_curves.png"
        ]


def test_a_second_process_loads_the_compiled_programs_and_trains_the_same(platform_home, tmp_path):
    """XLA's persistent cache under the platform home: the first process writes the programs,
    the second loads them, and the loaded programs compute what the compiled ones did."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "name: cached-cartpole\nenv: {id: CartPole-v1, n_envs: 4}\ncompiled: on\n"
        "rollout: {n_steps: 32}\nupdate: {epochs: 4, minibatch_size: 64}\n"
        "budget: {total_timesteps: 512, seed: 5}\n"
        "evaluation: {every_timesteps: 0, episodes: 2}\ncheckpoints: {every_timesteps: 0}\n"
    )
    cache = platform_home / "cache" / "xla"
    histories, written, read_at = [], [], []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "ppo_platform.cli", "run", str(spec), "--quiet"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        written.append(sorted(p.name for p in cache.glob("*-cache")))
        # XLA's cache stamps an entry's `-atime` file when a process reads the entry.
        read_at.append({p.name: p.read_bytes() for p in cache.glob("*-atime")})
        run_id = done.stdout.split("run ", 1)[1].split(",", 1)[0]
        client = MlflowClient(get_settings().tracking_uri)
        kl = client.get_metric_history(run_id, "train/approx_kl")
        histories.append([(m.step, m.value) for m in sorted(kl, key=lambda m: m.step)])
    assert written[0] and written[1] == written[0]  # nothing new compiled the second time
    assert read_at[1].keys() == read_at[0].keys()
    assert all(read_at[1][name] != read_at[0][name] for name in read_at[0])  # each one read
    assert len(histories[0]) == 4 and histories[1] == histories[0]


def test_sigterm_while_torch_writes_a_batch_checkpoint_kills_every_seed(platform_home, monkeypatch):
    """torch.save turns the handler's Terminated into a RuntimeError: the batch must still
    checkpoint each seed where it stands, close every run KILLED and raise Terminated."""
    from ppo_platform.training.compiled_batch import run_seeds

    _, previous = sigterm_mid_first_save(monkeypatch, 1024)
    try:
        with pytest.raises(Terminated) as raised:
            run_seeds(_spec(name="compiled-sigterm-mid-save"), [1, 2])
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert isinstance(raised.value.__cause__, RuntimeError)  # what torch made of it
    client = MlflowClient(get_settings().tracking_uri)
    experiment = client.get_experiment_by_name("compiled-sigterm-mid-save")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.data.params["budget.seed"] for r in runs) == ["1", "2"]
    assert [r.info.status for r in runs] == ["KILLED", "KILLED"]
    assert {r.data.tags[tag.FAILURE] for r in runs} == {"terminated (SIGTERM)"}
    steps = {}
    for run in runs:
        last = latest_checkpoint(platform_home / "runs" / run.info.run_id / "checkpoints")
        assert last is not None
        steps[run.data.params["budget.seed"]] = last.timesteps
    # The first seed was being saved at 1024; the second had not yet taken that chunk.
    assert steps == {"1": 1024, "2": 512}
