"""Alembic environment for the job store: run on the connection `database.migrate` passes in."""

from __future__ import annotations

from alembic import context

from ppo_platform.jobs.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
