"""One training run's session: the model wired to diagnostics, evaluation, checkpoints, MLflow
and progress reporting, whichever path (torch or compiled) trains it."""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gymnasium.spaces import Box
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import CallbackList
from stable_baselines3.common.vec_env import VecEnv

from ppo_platform import tracing
from ppo_platform.envs.build import EnvMaker, eval_seed
from ppo_platform.errors import EnvCrashError, TrackingError, TrainingError
from ppo_platform.execution import signals
from ppo_platform.health import Alert, DiagnosticsMonitor
from ppo_platform.spec.experiment import ExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import (
    RemoteRun,
)
from ppo_platform.trainers.callbacks import (
    PeriodicCheckpointCallback,
    PeriodicEvalCallback,
    RolloutStatsCallback,
)
from ppo_platform.trainers.errors import NonFiniteError, NonFiniteInputError
from ppo_platform.trainers.reporting import UpdateHooks
from ppo_platform.training import async_eval
from ppo_platform.training import checkpoints as ckpt
from ppo_platform.training import diagnosis as doctor
from ppo_platform.training.crash_record import record_env_crash
from ppo_platform.training.final_artifacts import log_final_artifacts
from ppo_platform.training.monitoring import (
    diagnostics_row,
    raise_alerts,
    thresholds_for,
    update_row,
)
from ppo_platform.training.progress import EventKind, ProgressEvent
from ppo_platform.training.resolved import record_resolved, resolved_setup
from ppo_platform.training.result import MLFLOW_STATUS, Outcome, closing_tags
from ppo_platform.training.result import RunResult as RunResult  # re-exported for callers
from ppo_platform.training.resume import run_folder as run_folder  # re-exported for callers

ProgressCallback = Callable[[ProgressEvent], None]


class TrainingSession:
    """Wires one model to diagnostics, evaluation, checkpoints, MLflow and progress reporting."""

    def __init__(
        self,
        spec: ExperimentSpec,
        tracker: RemoteRun,
        on_progress: ProgressCallback | None,
        cancel: threading.Event | None,
        make_env: EnvMaker | None = None,
        defer_plot: bool = False,
    ) -> None:
        self.spec, self.tracker, self.make_env = spec, tracker, make_env
        self.defer_plot = defer_plot
        self.on_progress = on_progress or (lambda event: None)
        self.cancel = cancel or threading.Event()
        self.monitor = DiagnosticsMonitor(thresholds_for(spec), spec.budget.total_timesteps)
        self.stop_alert: Alert | None = None
        self.last_eval: tuple[float, float] | None = None
        self.model: BaseAlgorithm | None = None
        self.evaluator: PeriodicEvalCallback | None = None
        self.rollout_stats, self.history = RolloutStatsCallback(), doctor.DoctorMetrics()
        self._started = time.perf_counter()
        self._start_steps = 0
        self._signals_mark = signals.received()  # interrupts before this one are not ours
        self._announced = False  # the `started` event (with the run id) was sent
        self.resolved: dict[str, str] = {}  # what the run resolved (training/resolved.py)
        self.path = {"training_path": "torch", "training_path_reason": "compiled: off"}

    @property
    def run_dir(self) -> Path:
        return self.tracker.run_dir  # known once the tracking process has created the run

    @property
    def checkpoint_dir(self) -> Path:
        return self.run_dir / "checkpoints"

    def _event(self, kind: EventKind, steps: int | None = None, **fields: Any) -> None:
        """An event at `steps` (default now; an async evaluation's: its snapshot's, as MLflow)."""
        assert self.model is not None
        self._announce()
        self.on_progress(
            ProgressEvent(
                kind=kind,
                timesteps=self.model.num_timesteps if steps is None else steps,
                total_timesteps=self.spec.budget.total_timesteps,
                **fields,
            )
        )

    def _announce(self) -> None:
        """The `started` event with the run id, once: before the first other event, or on
        closing a run that had none. The caller (the job service, a sweep member) holds the id
        as data and never looks its run up."""
        if self._announced:
            return
        run_id = self.tracker.run_id  # waits for the tracking process to create the run
        self._announced = True
        steps = self.model.num_timesteps if self.model is not None else 0
        total = self.spec.budget.total_timesteps
        event = ProgressEvent("started", steps, total, run_id=run_id, resolved=self.resolved)
        self.on_progress(event)

    def on_update(self, model: BaseAlgorithm, metrics: dict[str, float]) -> None:
        """Listener called by the trainer right after each update."""
        steps = model.num_timesteps
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        row = update_row(metrics, model.ep_info_buffer, (steps - self._start_steps) / elapsed)
        row.update(self.rollout_stats.latest)
        self.history.record(row, steps)  # first: an alert says the doctor's likely cause
        self.stop_alert = raise_alerts(
            self.monitor,
            self.spec.diagnostics.on_alert,
            getattr(model, "n_updates_done", 0),
            steps,
            metrics,
            lambda message: self._event("alert", message=message),
            self.stop_alert,
            explain=lambda: doctor.cause_hint(self.spec, self.history),
        )
        row.update(diagnostics_row(self.monitor, metrics))
        self.tracker.log_metrics({k: v for k, v in row.items() if not math.isnan(v)}, steps)
        async_eval.collect(self.evaluator)  # asynchronous evaluations that are in
        self._event(
            "update",
            fps=row["time/fps"],
            ep_rew_mean=row["rollout/ep_rew_mean"],
            approx_kl=metrics.get("train/approx_kl", math.nan),
            clip_fraction=metrics.get("train/clip_fraction", math.nan),
            explained_variance=metrics.get("train/explained_variance", math.nan),
            kl_beta=metrics.get("train/kl_beta", math.nan),
        )

    def _attach(self, model: BaseAlgorithm) -> None:
        """Listen to every update; stop at the next update boundary on cancel or a stop alert."""
        hooks = getattr(model, "update_hooks", None)
        if not isinstance(hooks, UpdateHooks):
            raise TypeError(f"{type(model).__name__} does not report its updates to listeners.")
        hooks.listeners.append(self.on_update)
        hooks.stop_condition = self._stop_requested

    def _stop_requested(self) -> bool:
        return self.cancel.is_set() or self.stop_alert is not None

    def on_eval(self, steps: int, mean: float, std: float) -> None:
        self.last_eval = (mean, std)
        self.tracker.log_metrics({"eval/mean_reward": mean, "eval/std_reward": std}, steps)
        self._event("eval", steps, eval_mean=mean)  # one step everywhere

    def save_checkpoint(self, steps: int) -> None:
        assert self.model is not None
        ckpt.save_checkpoint(
            self.model, self.checkpoint_dir, steps, self.spec.checkpoints.keep_last
        )

    def train(
        self, model: BaseAlgorithm, eval_env: VecEnv, remaining: int, fresh: bool
    ) -> RunResult:
        """Train `remaining` more env steps, then record the outcome truthfully in MLflow. The
        run's handle closes it once: with the outcome, or FAILED with the error (and the phase
        it happened in), or KILLED on an interrupt (after a checkpoint)."""
        self.model = model
        self._start_steps = model.num_timesteps
        self._started = time.perf_counter()
        try:
            with self.tracker:
                return self._train(model, eval_env, remaining, fresh)
        finally:  # a run that ends before its first event still reports its id
            with contextlib.suppress(TrackingError):
                self._announce()

    def begin(self, model: BaseAlgorithm, eval_env: VecEnv) -> PeriodicEvalCallback:
        """Listen to `model`, record the resolved setup (with the training path) and build the
        evaluator: what a run does before its first update, whichever path trains it."""
        self.model = model
        self.tracker.phase = "while starting"
        self._attach(model)
        self.resolved = resolved_setup(self.spec, model, own_env=self.make_env is not None)
        self.resolved.update(self.path)
        record_resolved(self.tracker, self.resolved)
        evaluator = async_eval.make_evaluator(
            self.spec, eval_env, self.on_eval, eval_seed(self.spec), self.make_env
        )
        self.tracker.phase = ""
        self.evaluator = evaluator
        return evaluator

    def _train(
        self, model: BaseAlgorithm, eval_env: VecEnv, remaining: int, fresh: bool
    ) -> RunResult:
        evaluator = self.begin(model, eval_env)
        finished = False  # else (cancel, interrupt, error) queued evaluations are dropped
        try:
            self._learn(model, evaluator, remaining, fresh)
            self.tracker.phase = "while finishing"
            result = self.finish(model, evaluator)
            finished = not self.cancel.is_set()
            return result
        finally:
            async_eval.close(evaluator, wait=finished)

    def _learn(
        self, model: BaseAlgorithm, evaluator: PeriodicEvalCallback, remaining: int, fresh: bool
    ) -> None:
        callbacks = CallbackList(
            [
                evaluator,
                self.rollout_stats,
                PeriodicCheckpointCallback(
                    self.spec.checkpoints.every_timesteps, self.save_checkpoint
                ),
            ]
        )
        tracing.mark("learn: begins")
        try:
            # log_interval=None: SB3's own log dump is off; metrics flow through on_update.
            model.learn(
                remaining,
                callback=callbacks,
                log_interval=None,  # type: ignore[arg-type]
                reset_num_timesteps=fresh,
            )
        except NonFiniteError as error:
            last = ckpt.latest_checkpoint(self.checkpoint_dir)
            where = f"last good checkpoint: {last.model}" if last else "no checkpoint was saved yet"
            self.tracker.finish(
                "FAILED",
                {
                    tag.OUTCOME: "diverged",
                    tag.FAILURE: str(error),
                    tag.FAILURE_SOURCE: "trainer",
                    tag.FAILURE_KIND: "non_finite_update",  # the doctor reads it as data
                    tag.FAILURE_STEP: str(model.num_timesteps),
                },
            )
            raise TrainingError(
                f"training diverged at step {model.num_timesteps}: {error} "
                f"({where}). Lower the learning rate or K."
            ) from error
        except NonFiniteInputError as error:  # the env's fault: no learning rate fixes it
            raise doctor.close_env_fault(self.tracker, self.spec, self.history, error) from error
        except EnvCrashError as error:
            raise record_env_crash(self.tracker, error, model.num_timesteps) from None
        except KeyboardInterrupt:
            self._checkpoint_interrupted(model)
            raise
        except Exception as error:
            self._raise_interrupt_behind(model, error)
            raise
        finally:
            model.env.close()  # type: ignore[union-attr]
        tracing.mark("learn: done")

    def finish(self, model: BaseAlgorithm, evaluator: PeriodicEvalCallback) -> RunResult:
        """The final evaluation, checkpoint, diagnosis and artifacts; the run closed with its
        outcome. An error after an interrupt raises the interrupt."""
        try:
            return self._finish_run(model, evaluator)
        except TrackingError:
            raise
        except Exception as error:
            self._raise_interrupt_behind(model, error)
            raise

    def _raise_interrupt_behind(self, model: BaseAlgorithm, error: Exception) -> None:
        """An error after Ctrl-C or SIGTERM is that interrupt in disguise (raised while torch
        wrote a checkpoint, it comes out of `torch.save` as a RuntimeError): checkpoint and
        raise the interrupt, so the run closes KILLED and the command and a sweep worker stop
        as for one."""
        interrupt = signals.interrupt_since(self._signals_mark)
        if interrupt is not None:
            self._checkpoint_interrupted(model)
            raise interrupt from error

    def _checkpoint_interrupted(self, model: BaseAlgorithm) -> None:
        """The checkpoint an interrupted run resumes from. Nothing raised here may replace the
        interrupt: a failed save is said on stderr."""
        tracing.mark("interrupted: saving a checkpoint")
        try:
            self.save_checkpoint(model.num_timesteps)
        except Exception as error:
            _warn(f"interrupted: the checkpoint at step {model.num_timesteps} failed: {error}")

    def _finish_run(self, model: BaseAlgorithm, evaluator: PeriodicEvalCallback) -> RunResult:
        outcome: Outcome = "completed"
        message = ""
        if self.cancel.is_set():
            outcome, message = "cancelled", "cancelled on request; checkpoint saved."
        elif self.stop_alert is not None:
            outcome = "stopped_by_alert"
            message = f"stopped by a diagnostics alert (on_alert: stop): {self.stop_alert.format()}"
        if outcome == "completed" and evaluator.last_eval_step != model.num_timesteps:
            evaluator.evaluate()
        # Cancelled: the checkpoint now; snapshots still queued for evaluation are dropped.
        async_eval.collect(evaluator, wait=outcome != "cancelled")
        tracing.mark("finish: final evaluation done")
        self.save_checkpoint(model.num_timesteps)
        tracing.mark("finish: checkpoint saved")
        continuous = isinstance(model.action_space, Box)
        diagnosis = doctor.session_diagnosis(self.spec, self.history, continuous)
        log_final_artifacts(
            self.tracker, self.spec, self.monitor, model, self.defer_plot, diagnosis
        )
        tracing.mark("finish: final model saved, artifacts + plot handed over")
        mean, std = self.last_eval if self.last_eval and outcome == "completed" else (None, None)
        top = diagnosis.top.cause if diagnosis.top else ""
        tags = closing_tags(outcome, len(self.monitor.alerts), top, mean, message)
        self.tracker.finish(MLFLOW_STATUS[outcome], tags)
        tracing.mark("finish: tracking process confirmed all durable")
        return RunResult(
            self.tracker.run_id,
            outcome,
            model.num_timesteps,
            mean,
            std,
            len(self.monitor.alerts),
            time.perf_counter() - self._started,
            message,
            self.tracker.write_seconds,
            tuple(self.monitor.summary_lines()),
            *((diagnosis.top.cause, diagnosis.top.line()) if diagnosis.top else ()),
        )


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr, flush=True)
