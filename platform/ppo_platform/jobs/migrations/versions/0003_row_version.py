"""experiments.row_version: a counter every UPDATE of the row moves on (SQLAlchemy `onupdate`),
so the API can tell in one indexed read whether the status it holds in memory is still current.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.add_column(sa.Column("row_version", sa.Integer, nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("experiments") as batch:
        batch.drop_column("row_version")
