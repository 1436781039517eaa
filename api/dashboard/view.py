"""Rows of the job store -> what the dashboard's templates show (plain dicts, no markup)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ppo_platform.jobs import Experiment

STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
KINDS = ("run", "seeds", "sweep", "tune")
# (done, total) counters of a run, a sweep and a study.
PROGRESS_PAIRS = (
    ("timesteps", "total_timesteps"),
    ("runs_done", "runs_total"),
    ("trials_done", "trials_total"),
)


def progress_fraction(job: Any) -> float:
    """How far the experiment is, 0..1, from its kind's progress counters."""
    if job.status == "succeeded":  # done, even when the last throttled progress event lags
        return 1.0
    progress = job.progress or {}
    for done, total in PROGRESS_PAIRS:
        if progress.get(total):
            return max(0.0, min(1.0, float(progress.get(done) or 0) / float(progress[total])))
    return 0.0


def headline(job: Any) -> str:
    """The number a user looks for: a run's final return, a study's best value so far."""
    result, progress = job.result or {}, job.progress or {}
    if job.kind == "tune":
        best = result.get("best_value", progress.get("best_value"))
        return "-" if best is None else f"best {best:.4g}"
    if job.kind in ("sweep", "seeds"):
        runs = result.get("runs") or []
        finals = [r["final_eval_mean"] for r in runs if r.get("final_eval_mean") is not None]
        if not finals:
            return "-"
        if job.kind == "seeds":  # one config: the seeds' spread, not a best one
            return f"mean {sum(finals) / len(finals):.4g} over {len(finals)} seeds"
        return f"best run {max(finals):.4g}"
    final = result.get("final_eval_mean")
    if final is not None:
        spread = result.get("final_eval_std")
        return f"{final:.4g}" if spread is None else f"{final:.4g} ± {spread:.3g}"
    latest = (job.diagnostics or {}).get("ep_rew_mean")
    return "-" if latest is None else f"{latest:.4g} (train)"


def when(moment: dt.datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def env_id(job: Experiment) -> str:
    env = (job.spec or {}).get("env") or {}
    return str(env.get("id", "-")) if isinstance(env, dict) else "-"


def row(job: Any, env: str | None = None) -> dict[str, Any]:
    """One line of the experiments table, from an Experiment or an experiment summary."""
    fraction = progress_fraction(job)
    return {
        "id": job.id,
        "name": job.name,
        "status": job.status,
        "kind": job.kind,
        "env": env if env is not None else env_id(job),
        "percent": round(100 * fraction),
        "alerts": job.alerts,
        "headline": headline(job),
        "started": when(job.started_at),
        "finished": when(job.finished_at),
        "created": when(job.created_at),
    }


def split_alert(message: str) -> tuple[str, str]:
    """An alert's finding and its advice (the monitor writes `finding -> advice`)."""
    finding, _, advice = message.partition(" -> ")
    return finding, advice
