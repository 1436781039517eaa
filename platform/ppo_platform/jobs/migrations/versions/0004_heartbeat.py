"""experiments.heartbeat_at: a running job's lease. Its process renews it every few seconds; a
restarted service re-queues a job left `running` only once the lease has expired (on Ray the
old task may still run: re-queueing it at once would run the job twice).

Numbered 0004 beside a possible 0003 of another branch: both revise 0002, and the store
upgrades to every head (`migrate` in database.py), so either order of merging works.

Revision ID: 0004
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("experiments", sa.Column("heartbeat_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("heartbeat_at")
