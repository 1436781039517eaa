"""Run one `algorithm: ppo_lm` spec: the LM trainer wired to diagnostics, evaluation, MLflow
(through the same tracking process as every run) and progress reporting.

MLflow steps are PPO updates; a progress event's `timesteps` counts updates too.
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from pathlib import Path
from typing import Any

from ppo_platform import tracing
from ppo_platform.errors import SpecError, SpecIssue, TrackingError, TrainingError
from ppo_platform.health import Alert, DiagnosticsMonitor
from ppo_platform.settings import Settings, get_settings
from ppo_platform.spec.lm import LMExperimentSpec
from ppo_platform.tracking import tags as tag
from ppo_platform.tracking.remote import RemoteRun, shared_tracking_process
from ppo_platform.trainers.errors import NonFiniteError, TrainerError
from ppo_platform.training.diagnosis import (
    DoctorMetrics,
    cause_hint,
    session_diagnosis,
    write_diagnosis,
)
from ppo_platform.training.lm_build import build_trainer, load_prompts
from ppo_platform.training.monitoring import (
    alerts_document,
    diagnostics_row,
    raise_alerts,
    thresholds_for,
)
from ppo_platform.training.progress import EventKind, ProgressEvent
from ppo_platform.training.resolved import lm_resolved_setup, record_resolved
from ppo_platform.training.result import MLFLOW_STATUS, Outcome, RunResult, closing_tags
from ppo_platform.training.runner import ProgressCallback, _prepare


class LMTrainingSession:
    """One LM run: listens to every update, evaluates on held-out prompts, closes the run."""

    def __init__(
        self,
        spec: LMExperimentSpec,
        tracker: RemoteRun,
        settings: Settings,
        on_progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> None:
        self.spec, self.tracker, self.settings = spec, tracker, settings
        self.on_progress = on_progress or (lambda event: None)
        self.cancel = cancel or threading.Event()
        self.monitor = DiagnosticsMonitor(thresholds_for(spec), spec.budget.updates)  # type: ignore[arg-type]
        self.history = DoctorMetrics()  # what the doctor reads at the run's end
        self.stop_alert: Alert | None = None
        self.last_eval: float | None = None
        self.trainer: Any = None
        self.eval_prompts: list[Any] = []
        self._started = time.perf_counter()
        self._announced = False
        self.resolved: dict[str, str] = {}  # what the run resolved (training/resolved.py)

    def _announce(self) -> None:
        """`started` first, with the run id and what the run resolved (the job service keeps
        both; the console says the second)."""
        if self._announced:
            return
        self._announced = True
        updates = self.trainer.n_updates if self.trainer is not None else 0
        self.on_progress(
            ProgressEvent(
                "started",
                updates,
                self.spec.budget.updates,
                run_id=self.tracker.run_id,
                resolved=self.resolved,
                language_model=True,
            )
        )

    def _event(self, kind: EventKind, **fields: Any) -> None:
        self._announce()
        updates = self.trainer.n_updates if self.trainer is not None else 0
        total = self.spec.budget.updates
        self.on_progress(ProgressEvent(kind, updates, total, language_model=True, **fields))

    def on_update(self, trainer: Any, metrics: dict[str, float]) -> None:
        update = trainer.n_updates
        row = dict(metrics)
        row["time/updates_per_second"] = update / max(time.perf_counter() - self._started, 1e-9)
        self.history.record(row, update)  # first: an alert says the doctor's likely cause
        self.stop_alert = raise_alerts(
            self.monitor,
            self.spec.diagnostics.on_alert,
            update,
            update,
            metrics,
            lambda message: self._event("alert", message=message),
            self.stop_alert,
            explain=lambda: cause_hint(self.spec, self.history),
        )
        row.update(diagnostics_row(self.monitor, metrics))
        self.tracker.log_metrics({k: v for k, v in row.items() if not math.isnan(v)}, update)
        self._event(
            "update",
            fps=row["time/updates_per_second"],
            ep_rew_mean=metrics["lm/reward_mean"],
            approx_kl=metrics.get("train/approx_kl", math.nan),
            clip_fraction=metrics.get("train/clip_fraction", math.nan),
            explained_variance=metrics.get("train/explained_variance", math.nan),
            kl_beta=metrics.get("lm/kl_beta", math.nan),
            kl_ref=metrics.get("lm/kl_ref", math.nan),
        )
        every = self.spec.evaluation.every_updates
        if every and update % every == 0 and update < self.spec.budget.updates:
            self.evaluate()

    def evaluate(self) -> None:
        """Greedy responses to the held-out prompts: mean reward (and per task), a table."""
        if not self.eval_prompts:
            return
        from ppo_platform.trainers.lm.rewards import Sample, score_samples

        trainer, update = self.trainer, self.trainer.n_updates
        responses = trainer.respond(self.eval_prompts)
        samples = [
            Sample(p.prompt, r, p.reference, len(trainer.tokenizer(r)["input_ids"]) + 1, p.task)
            for p, r in zip(self.eval_prompts, responses, strict=True)
        ]
        scores = score_samples(trainer.reward, samples)
        row = {"eval/mean_reward": sum(scores) / len(scores)}
        for task in sorted({s.task for s in samples}):
            picked = [x for x, s in zip(scores, samples, strict=True) if s.task == task]
            row[f"eval/mean_reward/{task}"] = sum(picked) / len(picked)
        self.tracker.log_metrics(row, update)
        self.history.record(row, update)
        self.last_eval = row["eval/mean_reward"]
        table = [
            {
                "prompt": s.prompt,
                "response": s.response,
                "reference": s.reference,
                "task": s.task,
                "reward": x,
            }
            for s, x in list(zip(samples, scores, strict=True))[: self.spec.evaluation.table_rows]
        ]
        path = self.tracker.run_dir / "samples" / f"eval_update_{update:06d}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"update": update, "rows": table}, indent=1))
        self.tracker.log_artifact(path, "samples")
        self._event("eval", eval_mean=self.last_eval)

    def train(self, trainer: Any, prompts: list[Any], eval_prompts: list[Any]) -> RunResult:
        self.trainer = trainer
        self.eval_prompts = eval_prompts[: self.spec.evaluation.max_prompts]
        trainer.add_update_listener(self.on_update)
        trainer.stop_condition = lambda: self.cancel.is_set() or self.stop_alert is not None
        try:
            self.resolved = lm_resolved_setup(self.spec, trainer)
            record_resolved(self.tracker, self.resolved)
            self._announce()
            tracing.mark("lm learn: begins")
            trainer.learn(prompts, self.spec.budget.updates)
        except NonFiniteError as error:
            self._close("FAILED", {tag.OUTCOME: "diverged", tag.FAILURE: str(error)})
            raise TrainingError(
                f"training diverged at update {trainer.n_updates}: {error}. "
                "Lower the learning rate or K."
            ) from error
        except KeyboardInterrupt:
            with contextlib.suppress(Exception):
                self._close("KILLED", {tag.OUTCOME: "cancelled", tag.FAILURE: "interrupted"})
            raise
        except TrackingError as error:
            self.tracker.fail(str(error))
            raise
        except Exception as error:
            reason = f"{type(error).__name__}: {error}"
            with contextlib.suppress(TrackingError):
                self._close("FAILED", {tag.OUTCOME: "failed", tag.FAILURE: reason})
            raise
        return self._finish()

    def _finish(self) -> RunResult:
        outcome: Outcome = "completed"
        message = ""
        if self.cancel.is_set():
            outcome, message = "cancelled", "cancelled on request."
        elif self.stop_alert is not None:
            outcome = "stopped_by_alert"
            message = f"stopped by a diagnostics alert (on_alert: stop): {self.stop_alert.format()}"
        if outcome == "completed":
            self.evaluate()
        final = self.tracker.run_dir / "final" / "model"
        self.trainer.save(final)
        for path in sorted(final.iterdir()):
            self.tracker.log_artifact(path, "model")
        alerts = self.tracker.run_dir / "alerts.json"
        alerts.write_text(json.dumps(alerts_document(self.monitor), indent=2))
        self.tracker.log_artifact(alerts, "diagnostics")
        diagnosis = session_diagnosis(self.spec, self.history, None)
        self.tracker.log_artifact(write_diagnosis(diagnosis, self.tracker.run_dir), "diagnostics")
        final_eval = self.last_eval if outcome == "completed" else None
        top = diagnosis.top.cause if diagnosis.top else ""
        tags = closing_tags(outcome, len(self.monitor.alerts), top, final_eval, message)
        self._close(MLFLOW_STATUS[outcome], tags)
        return RunResult(
            self.tracker.run_id,
            outcome,
            self.trainer.n_updates,
            self.last_eval if outcome == "completed" else None,
            None,  # one greedy evaluation: no spread to report
            len(self.monitor.alerts),
            time.perf_counter() - self._started,
            message,
            self.tracker.write_seconds,
            tuple(self.monitor.summary_lines()),
            top_cause=diagnosis.top.cause if diagnosis.top else "",
            top_cause_line=diagnosis.top.line() if diagnosis.top else "",
            language_model=True,
        )

    def _close(self, status: str, tags: dict[str, str]) -> None:
        try:
            self.tracker.finish(status, tags)
        except TrackingError as error:
            self.tracker.fail(str(error))
            raise


def run_lm_spec(
    spec: LMExperimentSpec,
    *,
    on_progress: ProgressCallback | None = None,
    cancel: threading.Event | None = None,
    settings: Settings | None = None,
    parent_run_id: str | None = None,
    tags: dict[str, str] | None = None,
) -> RunResult:
    """Train an LM spec as a new MLflow run (a child of `parent_run_id` when given, as a
    tuning trial's seed run is). Raises TrainingError if it diverges."""
    from transformers.utils import logging as transformers_logging

    # The run reports its own progress: no loading or saving bars inside its console lines.
    transformers_logging.disable_progress_bar()
    process = shared_tracking_process()
    settings = _prepare(settings or get_settings())
    try:
        prompts = load_prompts(spec.lm.prompts, "lm.prompts", settings)
        held_out = spec.lm.eval_prompts
        eval_prompts = load_prompts(held_out, "lm.eval_prompts", settings) if held_out else []
        trainer = build_trainer(spec, settings)
    except TrainerError as error:
        raise TrainingError(f"the LM run cannot start: {error}") from error
    try:
        trainer.check_prompts(prompts + eval_prompts)
    except TrainerError as error:
        issue = SpecIssue(
            "lm.generation.max_new_tokens",
            str(error),
            spec.lm.generation.max_new_tokens,
            fix="shorten the prompts or lower max_new_tokens.",
        )
        raise SpecError([issue]) from None
    tracker = RemoteRun.open(process, settings, spec, parent_run_id=parent_run_id, tags=tags)
    session = LMTrainingSession(spec, tracker, settings, on_progress, cancel)
    return session.train(trainer, prompts, eval_prompts)


def final_model_dir(run_dir: Path) -> Path:
    """Where a finished LM run keeps its policy (a model folder in transformers format)."""
    return run_dir / "final" / "model"
