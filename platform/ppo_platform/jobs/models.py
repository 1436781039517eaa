"""The job store's tables: experiments, their events, API keys, dashboard sessions (SQLAlchemy 2
declarative).

The schema itself is owned by the Alembic migrations in `migrations/versions`; these classes
must match them (tests/ppo_platform_tests/jobs checks that the migrated schema does).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, ClassVar, Literal

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    literal_column,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]
Kind = Literal["run", "seeds", "sweep", "tune"]
TERMINAL: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
# `member`: a sweep member ended (its run id, status, score; the sweep's runs_done/total);
# `trial`: a study's trial ended (its number, state, value and run id);
# `verify`: a study's held-out verification began, or verified one trial.
EVENT_KINDS = ("progress", "eval", "alert", "status", "log", "member", "trial", "verify")


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


class Experiment(Base):
    """One submitted run, sweep or study; `pk` orders them (cursor pagination)."""

    __tablename__ = "experiments"
    __table_args__ = (
        UniqueConstraint("owner", "idempotency_key", name="uq_owner_idempotency"),
        Index("ix_experiments_owner_status", "owner", "status"),
    )
    __mapper_args__ = {"eager_defaults": True}  # noqa: RUF012 (fetch row_version after flush)

    pk: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    id: Mapped[str] = mapped_column(String(32), unique=True, index=True)
    owner: Mapped[str] = mapped_column(String(64), index=True)
    kind: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), index=True)
    name: Mapped[str] = mapped_column(String(128))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    spec_hash: Mapped[str] = mapped_column(String(16))
    total_timesteps: Mapped[int] = mapped_column(Integer)
    idempotency_key: Mapped[str | None] = mapped_column(String(128), nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    mlflow_run_id: Mapped[str | None] = mapped_column(String(32))
    mlflow_run_ids: Mapped[list[Any]] = mapped_column(JSON, default=list)
    progress: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    diagnostics: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    alerts: Mapped[int] = mapped_column(Integer, default=0)
    result: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # What the run resolved when it started (migration 0006; training/resolved.py).
    resolved: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    pid: Mapped[int | None] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    # Moved on by every UPDATE, ORM or Core (migration 0003): StatusSnapshots compares it.
    row_version: Mapped[int] = mapped_column(
        Integer, default=0, server_default="0", onupdate=literal_column("row_version + 1")
    )
    # The running job's lease, renewed by its process (migration 0005).
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class Event(Base):
    """Something that happened to an experiment; `id` is the SSE event id (never reused)."""

    __tablename__ = "events"
    __table_args__ = {"sqlite_autoincrement": True}  # noqa: RUF012

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    experiment_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ApiKey(Base):
    """An API key, stored only as its SHA-256 hash; `name` is the owner of its experiments."""

    __tablename__ = "api_keys"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class WebSession(Base):
    """A dashboard sign-in: only the SHA-256 of its random id is stored, with the hash of the
    API key it was opened with (a revoked key ends it), its expiry and its logout time."""

    __tablename__ = "web_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner: Mapped[str] = mapped_column(String(64))
    key_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), index=True)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
