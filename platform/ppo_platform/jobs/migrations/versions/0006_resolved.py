"""experiments.resolved: what a run resolved when it started (vectorization and why, env
packages and library versions, device, torch threads), shown by `status` and the dashboard.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("experiments", sa.Column("resolved", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("resolved")
