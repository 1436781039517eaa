"""An index on experiments (owner, status): the per-key queue count of every submission and
the dispatcher's look at the queue read the index alone, however long the queue grows.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_experiments_owner_status", "experiments", ["owner", "status"])


def downgrade() -> None:
    op.drop_index("ix_experiments_owner_status", table_name="experiments")
