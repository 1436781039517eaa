"""The job store: experiments and their events as rows (no HTTP here).

Statuses move queued -> running -> succeeded | failed | cancelled; every change is also an
event, so the event stream alone tells a client what happened. Reads take `owner` so another
key's experiment is simply not found.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Select, bindparam, func, insert, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from ppo_platform.errors import (
    ConflictError,
    LimitError,
    NotFoundError,
    SpecIssue,
    UnavailableError,
)
from ppo_platform.jobs.database import checkpoint, make_engine, migrate, sessions, writer
from ppo_platform.jobs.models import TERMINAL, Event, Experiment, utcnow

MAX_PAGE = 100


@dataclass(frozen=True)
class Submission:
    """What to queue: a validated spec's resolved form and what the service needs to know."""

    kind: str
    name: str
    spec: dict[str, Any]
    spec_hash: str
    total_timesteps: int  # env steps of all its runs together


def new_id() -> str:
    return uuid.uuid4().hex


class JobStore:
    """Experiments and events in one SQLAlchemy database (migrated when opened)."""

    def __init__(
        self,
        url: str,
        lock_dir: Path,
        *,
        migrate_schema: bool = True,
        deferred_checkpoints: bool = False,
    ) -> None:
        """`deferred_checkpoints`: an intake worker's store, whose commits leave SQLite's WAL
        checkpoints to `checkpoint()` (database.py)."""
        self.url = url
        self.engine = make_engine(url, deferred_checkpoints)
        if migrate_schema:
            migrate(self.engine, lock_dir / "jobs-migrate.lock")
        self._read, self._write = sessions(self.engine)
        self._write_engine = writer(self.engine)
        sqlite = self.engine.dialect.name == "sqlite"
        self._local_writer: AbstractContextManager[Any] = (
            threading.Lock() if sqlite else nullcontext()
        )

    def read(self) -> Session:
        return self._read()

    @contextmanager
    def writing(self) -> Iterator[Session]:
        """A write transaction (on SQLite it holds the write lock from its first statement).

        On SQLite the threads of this process take turns on a lock first: a thread that finds
        the database locked would sleep in SQLite's busy handler (1, 2, 5, 10, ... ms) even
        when the lock is free again a millisecond later; a queue wakes the next one at once."""
        with self._local_writer, self._write.begin() as session:
            yield session

    def close(self) -> None:
        self.engine.dispose()

    def checkpoint(self) -> None:
        checkpoint(self.engine)

    def ping(self) -> None:
        """Raise UnavailableError unless the store answers a query."""
        try:
            with self.read() as session:
                session.execute(text("SELECT 1"))
        except OperationalError as error:
            raise UnavailableError(f"the job store does not answer: {error.orig}") from error

    # -- submit, read, list -------------------------------------------------------------

    def submit(
        self, owner: str, job: Submission, idempotency_key: str | None, max_queued: int
    ) -> tuple[Experiment, bool]:
        """Queue `job` for `owner`; (experiment, created). A known idempotency key returns the
        experiment it first created instead of a second one. One write transaction of cached
        Core statements on a plain connection (no ORM session: its setup was a third of it)."""
        try:
            with self._local_writer, self._write_engine.begin() as connection:
                if (
                    not idempotency_key
                    or not connection.execute(
                        _KNOWN_KEY, {"o": owner, "k": idempotency_key}
                    ).first()
                ):
                    self._check_queue(connection, owner, max_queued)
                    return _insert_queued(connection, owner, job, idempotency_key), True
        except IntegrityError:  # another request with the same key won the race
            if not idempotency_key:
                raise
        with self.read() as session:
            found = self._by_key(session, owner, idempotency_key)
        assert found is not None  # an experiment is never deleted
        return found, False

    @staticmethod
    def _by_key(session: Session, owner: str, key: str) -> Experiment | None:
        query = select(Experiment).where(
            Experiment.owner == owner, Experiment.idempotency_key == key
        )
        return session.scalars(query).first()

    @staticmethod
    def _check_queue(connection: Connection, owner: str, max_queued: int) -> None:
        """LimitError if `owner` has `max_queued` queued experiments; it counts at most that
        many rows, whatever the length of the queue."""
        queued = connection.execute(_COUNT_QUEUED, {"o": owner, "n": max_queued})
        count = queued.scalar_one()
        if count >= max_queued:
            raise LimitError(
                f"limit max_queued reached: {count} experiments of this key are queued "
                f"(at most {max_queued}, PPO_PLATFORM_MAX_QUEUED). Wait for some to start "
                "or cancel them."
            )

    def get(self, experiment_id: str, owner: str | None = None) -> Experiment:
        """The experiment, or NotFoundError (also when it belongs to another owner)."""
        with self.read() as session:
            return self._owned(session, select(Experiment), experiment_id, owner)

    @staticmethod
    def _owned(
        session: Session, query: Select[Experiment], experiment_id: str, owner: str | None
    ) -> Experiment:
        """The row `query` finds for `experiment_id`, or NotFoundError (also another owner's)."""
        row = session.scalars(query.where(Experiment.id == experiment_id)).first()
        if row is None or (owner is not None and row.owner != owner):
            raise NotFoundError(f"no experiment {experiment_id!r}.")
        return row

    def page(
        self,
        owner: str,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 20,
        cursor: int | None = None,
    ) -> tuple[list[Experiment], int | None]:
        """Newest first; (page, cursor of the next page or None)."""
        limit = max(1, min(limit, MAX_PAGE))
        query = select(Experiment).where(Experiment.owner == owner)
        if status:
            query = query.where(Experiment.status == status)
        if kind:
            query = query.where(Experiment.kind == kind)
        if cursor is not None:
            query = query.where(Experiment.pk < cursor)
        with self.read() as session:
            rows = list(session.scalars(query.order_by(Experiment.pk.desc()).limit(limit + 1)))
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (rows[-1].pk if more else None)

    # -- cancel -------------------------------------------------------------------------

    def cancel(self, experiment_id: str, owner: str | None = None) -> Experiment:
        """A queued experiment is cancelled at once (it never starts); a running one is asked
        to stop (the dispatcher stops it). Cancelling a finished one is a ConflictError."""
        with self.writing() as session:
            # Row-locked (SQLite: the write lock), so the dispatcher cannot start it meanwhile.
            query = select(Experiment).with_for_update()
            row = self._owned(session, query, experiment_id, owner)
            if row.status == "queued":
                row.status, row.finished_at = "cancelled", utcnow()
                session.add(_event(row.id, "status", {"status": "cancelled"}))
            elif row.status in TERMINAL and row.status != "cancelled":
                raise ConflictError(
                    [
                        SpecIssue(
                            "status",
                            "the experiment already finished; there is nothing to cancel.",
                            row.status,
                        )
                    ]
                )
            row.cancel_requested = True
        return row

    # -- events -------------------------------------------------------------------------

    def append_event(
        self, experiment_id: str, kind: str, data: dict[str, Any], **changes: Any
    ) -> int:
        """Add one event and apply `changes` to the experiment row in the same transaction."""
        with self.writing() as session:
            row = _event(experiment_id, kind, data)
            session.add(row)
            if kind == "alert":
                changes["alerts"] = Experiment.alerts + 1
            if changes:
                session.execute(
                    update(Experiment).where(Experiment.id == experiment_id).values(**changes)
                )
            session.flush()
            return row.id

    def events_after(
        self, experiment_id: str, after: int = 0, kinds: Sequence[str] = (), limit: int = 500
    ) -> list[Event]:
        query = select(Event).where(Event.experiment_id == experiment_id, Event.id > after)
        if kinds:
            query = query.where(Event.kind.in_(kinds))
        with self.read() as session:
            return list(session.scalars(query.order_by(Event.id).limit(limit)))

    # -- the dispatcher's side ------------------------------------------------------------

    def with_status(self, status: str) -> list[Experiment]:
        """Every experiment in `status`, oldest first."""
        query = select(Experiment).where(Experiment.status == status).order_by(Experiment.pk)
        with self.read() as session:
            return list(session.scalars(query))

    def oldest_queued_per_owner(self, skip_owners: Sequence[str]) -> list[tuple[str, str]]:
        """(id, owner) of each owner's oldest queued experiment, oldest first: one candidate
        per owner, so the dispatcher can take turns between owners."""
        firsts = select(func.min(Experiment.pk)).where(Experiment.status == "queued")
        if skip_owners:
            firsts = firsts.where(Experiment.owner.not_in(list(skip_owners)))
        query = select(Experiment.id, Experiment.owner).where(
            Experiment.pk.in_(firsts.group_by(Experiment.owner).scalar_subquery())
        )
        with self.read() as session:
            rows = session.execute(query.order_by(Experiment.pk))
            return [(row.id, row.owner) for row in rows]

    def cancels_requested(self) -> list[str]:
        """Ids of running experiments whose cancel was requested."""
        query = select(Experiment.id).where(
            Experiment.status == "running", Experiment.cancel_requested.is_(True)
        )
        with self.read() as session:
            return list(session.scalars(query))

    def mark_running(self, experiment_id: str) -> bool:
        """queued -> running; False if it is no longer queued (cancelled meanwhile)."""
        with self.writing() as session:
            done = session.execute(
                update(Experiment)
                .where(Experiment.id == experiment_id, Experiment.status == "queued")
                .values(
                    status="running",
                    started_at=utcnow(),
                    heartbeat_at=utcnow(),
                    attempts=Experiment.attempts + 1,
                )
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                return False
            session.add(_event(experiment_id, "status", {"status": "running"}))
        return True

    def finish(
        self,
        experiment_id: str,
        status: str,
        *,
        error: str | None = None,
        result: dict[str, Any] | None = None,
    ) -> bool:
        """running -> a final status with its error or result; False if it was not running."""
        values: dict[str, Any] = {"status": status, "finished_at": utcnow(), "error": error}
        if result is not None:
            values["result"] = result
        with self.writing() as session:
            done = session.execute(
                update(Experiment)
                .where(Experiment.id == experiment_id, Experiment.status == "running")
                .values(**values)
            )
            if not done.rowcount:  # type: ignore[attr-defined]
                return False
            data = {"status": status, **({"error": error} if error else {})}
            session.add(_event(experiment_id, "status", data))
        return True

    def requeue(self, experiment_id: str, reason: str) -> None:
        """running -> queued (its process is gone); it resumes when it is dispatched again."""
        with self.writing() as session:
            session.execute(
                update(Experiment)
                .where(Experiment.id == experiment_id, Experiment.status == "running")
                .values(status="queued", pid=None, heartbeat_at=None)
            )
            session.add(_event(experiment_id, "status", {"status": "queued", "reason": reason}))

    def beat(self, experiment_id: str) -> None:
        """Renew a running job's lease (its process calls this every few seconds)."""
        self.update(experiment_id, heartbeat_at=utcnow())

    def update(self, experiment_id: str, **changes: Any) -> None:
        with self.writing() as session:
            session.execute(
                update(Experiment).where(Experiment.id == experiment_id).values(**changes)
            )


# Executed on the session's Connection: plain Core statements, compiled once and cached.
_KNOWN_KEY = select(Experiment.pk).where(
    Experiment.owner == bindparam("o"), Experiment.idempotency_key == bindparam("k")
)
_COUNT_QUEUED = select(func.count()).select_from(
    select(Experiment.pk)
    .where(Experiment.owner == bindparam("o"), Experiment.status == "queued")
    .limit(bindparam("n"))
    .subquery()
)
_INSERT_EXPERIMENT = insert(Experiment).returning(Experiment.pk)
_INSERT_EVENT = insert(Event)


def _insert_queued(
    connection: Connection, owner: str, job: Submission, idempotency_key: str | None
) -> Experiment:
    """The row of a new queued experiment and its first event, as two cached Core INSERTs (the
    ORM's unit of work cost a third of a submission's CPU); returned as a detached row."""
    values: dict[str, Any] = {
        "id": new_id(),
        "owner": owner,
        "kind": job.kind,
        "status": "queued",
        "name": job.name,
        "spec": job.spec,
        "spec_hash": job.spec_hash,
        "total_timesteps": job.total_timesteps,
        "idempotency_key": idempotency_key,
        "created_at": utcnow(),
        "started_at": None,
        "finished_at": None,
        "mlflow_run_id": None,
        "mlflow_run_ids": [],
        "progress": {"timesteps": 0, "total_timesteps": job.total_timesteps},
        "diagnostics": {},
        "alerts": 0,
        "result": {},
        "error": None,
        "cancel_requested": False,
        "pid": None,
        "attempts": 0,
        "row_version": 0,
    }
    pk = connection.execute(_INSERT_EXPERIMENT, values).scalar_one()
    event = {"status": "queued"}
    connection.execute(
        _INSERT_EVENT,
        {"experiment_id": values["id"], "kind": "status", "data": event, "created_at": utcnow()},
    )
    return Experiment(pk=pk, **values)


def _event(experiment_id: str, kind: str, data: dict[str, Any]) -> Event:
    return Event(experiment_id=experiment_id, kind=kind, data=data, created_at=utcnow())


def age_seconds(moment: dt.datetime | None) -> float:
    if moment is None:
        return 0.0
    if moment.tzinfo is None:  # SQLite hands naive datetimes back
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return (utcnow() - moment).total_seconds()
