"""A key's experiments as table rows: the columns a list shows, in one query, no spec bodies.

The dashboard lists up to hundreds of experiments on one page; loading whole rows (each with its
full spec as JSON) costs most of that page's time, so this reads only what the table shows and
the env id out of the spec in SQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from ppo_platform.jobs.models import Experiment
from ppo_platform.jobs.store import JobStore

SUMMARY_COLUMNS = (
    Experiment.id,
    Experiment.name,
    Experiment.kind,
    Experiment.status,
    Experiment.progress,
    Experiment.diagnostics,
    Experiment.alerts,
    Experiment.result,
    Experiment.created_at,
    Experiment.started_at,
    Experiment.finished_at,
)


def experiment_summaries(
    store: JobStore, owner: str, *, status: str | None, kind: str | None, limit: int
) -> list[Any]:
    """The owner's newest `limit` experiments (rows with the columns above and `env_id`)."""
    env_id = Experiment.spec[("env", "id")].as_string().label("env_id")
    query = select(*SUMMARY_COLUMNS, env_id).where(Experiment.owner == owner)
    if status:
        query = query.where(Experiment.status == status)
    if kind:
        query = query.where(Experiment.kind == kind)
    with store.read() as session:
        return list(session.execute(query.order_by(Experiment.pk.desc()).limit(limit)))
