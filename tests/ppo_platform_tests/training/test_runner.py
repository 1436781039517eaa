"""The runner end to end on tiny real runs: SB3 training, diagnostics, checkpoints, MLflow."""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from mlflow.tracking import MlflowClient

from ppo_platform.errors import SpecError, Terminated, TrainingError
from ppo_platform.settings import get_settings
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.spec.loader import validate_data
from ppo_platform.training.checkpoints import latest_checkpoint
from ppo_platform.training.progress import ProgressEvent
from ppo_platform.training.runner import resume_run, run_folder, run_spec

BUDGET = 2048  # 8 updates of 4 envs x 64 steps


def tiny_spec(**overrides: Any) -> ExperimentSpec:
    data: dict[str, Any] = {
        "name": "tiny",
        "env": {"id": "CartPole-v1", "n_envs": 4},
        "rollout": {"n_steps": 64},
        "update": {"epochs": 4, "minibatch_size": 64, "learning_rate": 3e-4},
        "budget": {"total_timesteps": BUDGET, "seed": 0},
        "evaluation": {"every_timesteps": 1024, "episodes": 3},
        "checkpoints": {"every_timesteps": 512, "keep_last": 2},
    }
    for path, value in overrides.items():
        node = data
        *parents, leaf = path.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return validate_data(data)


def client() -> MlflowClient:
    return MlflowClient(get_settings().tracking_uri)


def history(run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client().get_metric_history(run_id, key))


def artifact_paths(run_id: str, folder: str) -> set[str]:
    return {entry.path for entry in client().list_artifacts(run_id, folder)}


@pytest.fixture(scope="module")
def finished(shared_home: Path) -> tuple[ExperimentSpec, Any, list[ProgressEvent]]:
    """One completed tiny CartPole run shared by the read-back tests below."""
    events: list[ProgressEvent] = []
    spec = tiny_spec()
    return spec, run_spec(spec, on_progress=events.append), events


def test_completed_run_is_finished_in_mlflow_with_truthful_tags(finished) -> None:
    spec, result, _ = finished
    run = client().get_run(result.run_id)
    assert result.outcome == "completed" and run.info.status == "FINISHED"
    assert result.timesteps == BUDGET
    assert run.data.tags["ppo_platform.spec_hash"] == spec.spec_hash()
    assert run.data.tags["ppo_platform.outcome"] == "completed"
    assert run.data.tags["mlflow.runName"] == "tiny"
    assert run.data.tags["ppo_platform.fast_paths"] == "on"  # the trainer's fast paths ran
    experiment = client().get_experiment(run.info.experiment_id)
    assert experiment.name == "tiny"


def test_params_are_the_flattened_resolved_spec(finished) -> None:
    _, result, _ = finished
    params = client().get_run(result.run_id).data.params
    assert params["update.epochs"] == "4"
    assert params["env.id"] == "CartPole-v1"
    assert params["surrogate.clip_epsilon.start"] == "0.2"  # a default, filled in
    assert params["policy.net_arch"] == "[64, 64]"


def test_every_update_logs_sb3_named_metrics_at_its_env_step(finished) -> None:
    _, result, _ = finished
    steps = [256 * i for i in range(1, 9)]
    for key in (
        "train/approx_kl",
        "train/clip_fraction",
        "train/explained_variance",
        "train/entropy_loss",
        "train/policy_gradient_loss",
        "train/value_loss",
        "rollout/ep_rew_mean",
        "time/fps",
        "diagnostics/alerts_total",
    ):
        assert [step for step, _ in history(result.run_id, key)] == steps, key


def test_metrics_reach_mlflow_for_the_update_that_computed_them(finished) -> None:
    _, result, events = finished
    reported = [(e.timesteps, e.approx_kl) for e in events if e.kind == "update"]
    logged = history(result.run_id, "train/approx_kl")
    assert [s for s, _ in logged] == [s for s, _ in reported]
    assert np.allclose([v for _, v in logged], [v for _, v in reported])


def test_the_first_event_carries_the_run_id_and_no_other_does(finished) -> None:
    _, result, events = finished
    assert (events[0].kind, events[0].run_id) == ("started", result.run_id)
    assert [e for e in events if e.kind == "started" or e.run_id] == [events[0]]


def test_evaluation_runs_periodically_and_at_the_end(finished) -> None:
    _, result, _ = finished
    evals = history(result.run_id, "eval/mean_reward")
    assert [step for step, _ in evals] == [1024, 2048]
    assert result.final_eval_mean == pytest.approx(evals[-1][1])
    assert all(value >= 8 for _, value in evals)  # CartPole episodes last at least 8 steps


def test_artifacts_hold_spec_model_alerts_and_plot(finished) -> None:
    spec, result, _ = finished
    assert artifact_paths(result.run_id, "model") == {"model/model.zip"}
    assert artifact_paths(result.run_id, "plots") == {"plots/training_curves.png"}
    assert artifact_paths(result.run_id, "diagnostics") == {
        "diagnostics/alerts.json",
        "diagnostics/diagnosis.json",
    }
    stored = client().download_artifacts(result.run_id, "spec/resolved_spec.yaml")
    assert validate_data(yaml.safe_load(Path(stored).read_text())) == spec


def test_alerts_artifact_matches_alert_count(finished) -> None:
    _, result, _ = finished
    stored = Path(client().download_artifacts(result.run_id, "diagnostics/alerts.json"))
    stored_alerts = json.loads(stored.read_text())
    alerts = stored_alerts["alerts"]
    assert len(alerts) == result.alerts
    assert sum(s["episodes"] for s in stored_alerts["signals"]) == result.alerts
    assert history(result.run_id, "diagnostics/alerts_total")[-1][1] == result.alerts


def test_checkpoints_keep_only_the_newest(finished) -> None:
    _, result, _ = finished
    folder = run_folder(get_settings(), result.run_id) / "checkpoints"
    assert sorted(p.name for p in folder.glob("*.zip")) == [
        "step_000000001536.zip",
        "step_000000002048.zip",
    ]


def test_same_seed_trains_identically(shared_home: Path, finished) -> None:
    _, first, _ = finished
    second = run_spec(tiny_spec())
    assert history(first.run_id, "train/approx_kl") == history(second.run_id, "train/approx_kl")
    assert first.final_eval_mean == second.final_eval_mean


def test_absurd_learning_rate_raises_kl_and_clip_alerts(shared_home: Path) -> None:
    result = run_spec(tiny_spec(update__learning_rate=0.5))
    assert result.outcome == "completed"
    alerts = json.loads(
        Path(client().download_artifacts(result.run_id, "diagnostics/alerts.json")).read_text()
    )
    first = alerts["alerts"][0]
    assert (first["signal"], first["update"], first["severity"]) == ("approx_kl", 1, "critical")
    assert first["value"] > 0.1 and "lower K" in first["advice"]
    assert history(result.run_id, "diagnostics/alerts/approx_kl")[0][1] == 1.0


def test_on_alert_stop_ends_training_early_with_failed_status(shared_home: Path) -> None:
    result = run_spec(tiny_spec(update__learning_rate=0.5, diagnostics__on_alert="stop"))
    run = client().get_run(result.run_id)
    assert result.outcome == "stopped_by_alert"
    assert result.timesteps < BUDGET
    assert run.info.status == "FAILED"
    assert run.data.tags["ppo_platform.outcome"] == "stopped_by_alert"
    assert "approx KL" in run.data.tags["ppo_platform.stop_reason"]


def test_cancel_event_stops_cleanly_as_killed_with_a_checkpoint(shared_home: Path) -> None:
    cancel = threading.Event()

    def cancel_after_two_updates(event: ProgressEvent) -> None:
        if event.kind == "update" and event.timesteps >= 512:
            cancel.set()

    result = run_spec(tiny_spec(), on_progress=cancel_after_two_updates, cancel=cancel)
    assert result.outcome == "cancelled"
    assert client().get_run(result.run_id).info.status == "KILLED"
    last = latest_checkpoint(run_folder(get_settings(), result.run_id) / "checkpoints")
    assert last is not None and last.timesteps == result.timesteps < BUDGET


def test_an_interrupt_is_never_replaced_by_a_failing_checkpoint_while_closing(
    shared_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C mid-run with a full disk: the checkpoint fails, yet the interrupt reaches the
    caller (a sweep worker then starts no further member) and the run is closed KILLED."""
    from ppo_platform.training.runner import TrainingSession

    def ctrl_c(event: ProgressEvent) -> None:
        if event.kind == "update" and event.timesteps >= 512:
            monkeypatch.setattr(TrainingSession, "save_checkpoint", disk_full)
            raise KeyboardInterrupt

    def disk_full(self: TrainingSession, steps: int) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(KeyboardInterrupt):
        run_spec(tiny_spec(name="tiny-interrupted"), on_progress=ctrl_c)
    [run] = client().search_runs(
        [client().get_experiment_by_name("tiny-interrupted").experiment_id]  # type: ignore[union-attr]
    )
    assert run.info.status == "KILLED"
    assert run.data.tags["ppo_platform.failure"] == "interrupted"
    assert "the checkpoint at step 512 failed: [Errno 28] No space left" in capsys.readouterr().err


class SignalsItselfMidWrite(io.BytesIO):
    """A file that sends this process SIGTERM while torch finishes writing into it."""

    writes = 0

    def write(self, data: Any) -> int:
        self.writes += 1
        if self.writes == 3:  # torch's end-of-archive records
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)  # the handler runs here, inside torch.save's write callback
        return super().write(data)


def sigterm_mid_first_save(
    monkeypatch: pytest.MonkeyPatch, from_steps: int
) -> tuple[list[int], Any]:
    """Every session's checkpoint save patched so that the first one at or past `from_steps`
    gets SIGTERM while torch writes, with the platform's handler installed. Returns the list
    that records that step and the SIGTERM handler before, for the test to put back."""
    import torch

    from ppo_platform.execution.signals import terminate_as_interrupt
    from ppo_platform.training.session import TrainingSession

    real_save = TrainingSession.save_checkpoint
    signalled: list[int] = []

    def save_checkpoint(self: TrainingSession, steps: int) -> None:
        if steps >= from_steps and not signalled:
            signalled.append(steps)
            torch.save({"weights": torch.zeros(64)}, SignalsItselfMidWrite())
        real_save(self, steps)

    monkeypatch.setattr(TrainingSession, "save_checkpoint", save_checkpoint)
    previous = signal.getsignal(signal.SIGTERM)
    terminate_as_interrupt()
    return signalled, previous


def test_sigterm_while_torch_writes_a_checkpoint_closes_the_run_killed(
    shared_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch.save turns the handler's Terminated into a RuntimeError; the run must still end
    KILLED with the signal's reason and the caller must get Terminated, not a failure."""
    signalled, previous = sigterm_mid_first_save(monkeypatch, 512)
    try:
        with pytest.raises(Terminated) as raised:
            run_spec(tiny_spec(name="tiny-sigterm-mid-save"))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert isinstance(raised.value.__cause__, RuntimeError)  # what torch made of it
    experiment = client().get_experiment_by_name("tiny-sigterm-mid-save")
    assert experiment is not None
    [run] = client().search_runs([experiment.experiment_id])
    assert run.info.status == "KILLED"
    assert run.data.tags["ppo_platform.failure"] == "terminated (SIGTERM)"
    last = latest_checkpoint(run_folder(get_settings(), run.info.run_id) / "checkpoints")
    assert last is not None and last.timesteps == signalled[0]


def test_resume_continues_from_last_checkpoint_into_the_same_run(shared_home: Path) -> None:
    cancel = threading.Event()
    first = run_spec(
        tiny_spec(),
        cancel=cancel,
        on_progress=lambda e: cancel.set() if e.timesteps >= 768 else None,
    )
    stopped_at = first.timesteps
    resumed = resume_run(first.run_id)
    assert resumed.run_id == first.run_id
    assert resumed.outcome == "completed" and resumed.timesteps == BUDGET
    run = client().get_run(first.run_id)
    assert run.info.status == "FINISHED"
    assert run.data.tags["ppo_platform.resumed_from_step"] == str(stopped_at)
    steps = [step for step, _ in history(first.run_id, "train/approx_kl")]
    assert steps == sorted(steps) and steps[-1] >= BUDGET
    assert [s for s in steps if s > stopped_at] == list(range(stopped_at + 256, steps[-1] + 1, 256))


class HugeRewardAfter(gym.Wrapper):
    """CartPole whose rewards turn 3e38 (finite, near float32's largest) after `after` steps:
    their discounted sums overflow to infinity, a real divergence. (A NaN reward is the env's
    fault and stops the run before training sees it: tests/ppo_platform_tests/doctor.)"""

    def __init__(self, env: gym.Env, after: int = 700) -> None:
        super().__init__(env)
        self.after, self.steps = after, 0

    def step(self, action: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return obs, (3e38 if self.steps > self.after else reward), terminated, truncated, info


def _register_nan_env() -> str:
    env_id = "tests/HugeRewardCartPole-v0"
    if env_id not in gym.registry:
        gym.register(
            env_id, entry_point=lambda **kw: HugeRewardAfter(gym.make("CartPole-v1", **kw))
        )
    return env_id


def test_non_finite_loss_fails_the_run_and_keeps_the_last_good_checkpoint(
    shared_home: Path,
) -> None:
    spec = tiny_spec(env__id=_register_nan_env(), env__n_envs=1, checkpoints__every_timesteps=256)
    with pytest.raises(TrainingError, match="diverged") as caught:
        run_spec(spec)
    runs = client().search_runs(
        [client().get_experiment_by_name("tiny").experiment_id],
        filter_string="tags.`ppo_platform.outcome` = 'diverged'",
    )
    assert len(runs) == 1 and runs[0].info.status == "FAILED"
    last = latest_checkpoint(run_folder(get_settings(), runs[0].info.run_id) / "checkpoints")
    assert last is not None and last.timesteps <= 768
    assert str(last.model) in str(caught.value)
    from stable_baselines3 import PPO

    params = PPO.load(last.model, device="cpu").policy.parameters()
    assert all(np.isfinite(p.detach().numpy()).all() for p in params)


def test_unknown_env_id_is_refused_before_any_run_exists(platform_home: Path) -> None:
    with pytest.raises(SpecError) as caught:
        run_spec(tiny_spec(env__id="NoSuchEnv-v0"))
    assert caught.value.issues[0].path == "env.id"
    assert caught.value.issues[0].value == "NoSuchEnv-v0"
    assert not (platform_home / "runs").exists()


def test_normalized_run_stores_vecnormalize_statistics(shared_home: Path) -> None:
    spec = tiny_spec(
        name="pendulum-tiny",
        env__id="Pendulum-v1",
        env__normalize={"obs": True, "reward": True},
        evaluation__every_timesteps=0,
        budget__total_timesteps=1024,
    )
    result = run_spec(spec)
    assert artifact_paths(result.run_id, "model") == {"model/model.zip", "model/vecnormalize.pkl"}
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    stats = VecNormalize.load(
        client().download_artifacts(result.run_id, "model/vecnormalize.pkl"),
        DummyVecEnv([lambda: gym.make("Pendulum-v1")]),
    )
    assert stats.obs_rms.count > 1000  # statistics from the 1024 training steps
    assert [s for s, _ in history(result.run_id, "eval/mean_reward")] == [1024]


def test_artifacts_live_under_the_platform_home_not_the_working_directory(finished) -> None:
    _, result, _ = finished
    location = client().get_run(result.run_id).info.artifact_uri
    assert location.startswith((get_settings().home / "artifacts").resolve().as_uri())
    assert not Path("mlruns").exists() or result.run_id not in {
        p.name for p in Path("mlruns").rglob("*")
    }
