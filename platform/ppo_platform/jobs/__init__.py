"""The job service: experiments as rows (SQLAlchemy + Alembic), a dispatcher that runs them in
their own processes, their events. No HTTP here; `api/` is a thin edge over it.

Importing this package stays light (SQLAlchemy only): training, sweeps and tuning are imported
inside the job processes.
"""

from ppo_platform.jobs.config import ServiceSettings, database_url, get_service_settings
from ppo_platform.jobs.dispatcher import Dispatcher
from ppo_platform.jobs.intake import kind_of, parse_spec, prepare_submission
from ppo_platform.jobs.models import TERMINAL, Event, Experiment
from ppo_platform.jobs.store import JobStore, Submission

__all__ = [
    "TERMINAL",
    "Dispatcher",
    "Event",
    "Experiment",
    "JobStore",
    "ServiceSettings",
    "Submission",
    "database_url",
    "get_service_settings",
    "kind_of",
    "parse_spec",
    "prepare_submission",
]
