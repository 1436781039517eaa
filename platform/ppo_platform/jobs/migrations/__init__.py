"""Alembic migrations of the job store (applied by `ppo_platform.jobs.database.migrate`)."""
