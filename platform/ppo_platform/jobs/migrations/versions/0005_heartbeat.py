"""experiments.heartbeat_at: a running job's lease. Its process renews it every few seconds; a
restarted service re-queues a job left `running` only once the lease has expired (on Ray the
old task may still run: re-queueing it at once would run the job twice).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("experiments", sa.Column("heartbeat_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("heartbeat_at")
