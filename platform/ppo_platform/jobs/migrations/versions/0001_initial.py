"""The job store: experiments, events, api_keys.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    tz = sa.DateTime(timezone=True)
    op.create_table(
        "experiments",
        sa.Column("pk", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("owner", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("spec_hash", sa.String(16), nullable=False),
        sa.Column("total_timesteps", sa.Integer, nullable=False),
        sa.Column("idempotency_key", sa.String(128), nullable=True),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("started_at", tz, nullable=True),
        sa.Column("finished_at", tz, nullable=True),
        sa.Column("mlflow_run_id", sa.String(32), nullable=True),
        sa.Column("mlflow_run_ids", sa.JSON, nullable=False),
        sa.Column("progress", sa.JSON, nullable=False),
        sa.Column("diagnostics", sa.JSON, nullable=False),
        sa.Column("alerts", sa.Integer, nullable=False),
        sa.Column("result", sa.JSON, nullable=False),
        sa.Column("error", sa.Text, nullable=True),
        sa.Column("cancel_requested", sa.Boolean, nullable=False),
        sa.Column("pid", sa.Integer, nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.UniqueConstraint("owner", "idempotency_key", name="uq_owner_idempotency"),
    )
    op.create_index("ix_experiments_id", "experiments", ["id"], unique=True)
    op.create_index("ix_experiments_owner", "experiments", ["owner"])
    op.create_index("ix_experiments_status", "experiments", ["status"])
    op.create_table(
        "events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column(
            "experiment_id",
            sa.String(32),
            sa.ForeignKey("experiments.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("data", sa.JSON, nullable=False),
        sa.Column("created_at", tz, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_experiment_id", "events", ["experiment_id"])
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
        sa.Column("created_at", tz, nullable=False),
        sa.Column("revoked_at", tz, nullable=True),
    )


def downgrade() -> None:
    op.drop_table("api_keys")
    op.drop_index("ix_events_experiment_id", "events")
    op.drop_table("events")
    op.drop_table("experiments")
