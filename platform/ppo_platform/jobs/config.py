"""Settings of the job service and the API in front of it: the store, concurrency, limits, keys.

Every field can be set as PPO_PLATFORM_<FIELD> in the environment, like `Settings`; the
platform home (and so the default SQLite file) comes from `Settings`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from ppo_platform.execution.local import default_workers
from ppo_platform.settings import Settings, get_settings


class ServiceSettings(BaseSettings):
    """The job service's knobs; limits apply per API key."""

    model_config = SettingsConfigDict(env_prefix="PPO_PLATFORM_", extra="ignore")

    jobs_database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the job store (e.g. postgresql+psycopg://...); "
        "default sqlite:///<home>/jobs.db.",
    )
    jobs_sqlite_synchronous: Literal["normal", "full"] = Field(
        "normal",
        description="SQLite job store: 'normal' (WAL, no fsync per commit: a crash or SIGKILL "
        "of any process loses nothing committed, a power loss or OS crash may lose the last "
        "commits) or 'full' (an fsync per commit: ~2 ms, tails of 20-40 ms on a busy disk).",
    )
    jobs_concurrency: int = Field(
        default_factory=default_workers, ge=1, description="Jobs running at once (one per core)."
    )
    intake_workers: int = Field(
        default_factory=lambda: min(2, max(1, default_workers() // 2)),
        ge=0,
        le=16,
        description="Processes that read and validate submitted specs off the API's event "
        "loop (0: threads of the API process).",
    )
    job_nice: int = Field(
        10,
        ge=0,
        le=19,
        description="Niceness of job processes (and their children): under contention for "
        "the cores the API answers first; an idle machine still gives training every core "
        "(0: same priority as the API).",
    )
    api_keys: dict[str, str] = Field(
        default_factory=dict,
        description='Extra API keys from settings, as JSON {"owner name": "key"}.',
    )
    key_cache_seconds: float = Field(
        5.0,
        ge=0,
        description="How long a known API key is remembered; a key revoked by another "
        "process stops working within this time (0: look every key up).",
    )
    max_body_bytes: int = Field(1_000_000, ge=1024, description="Largest request body accepted.")
    max_download_bytes: int = Field(
        1 << 30,
        ge=1,
        description="Largest file the API serves (a run's model.zip, vecnormalize.pkl, videos).",
    )
    login_attempts: int = Field(
        10, ge=1, description="Failed dashboard logins allowed per client address per window."
    )
    login_window_seconds: float = Field(
        60.0, gt=0, description="The window of login_attempts; past it the login form is 429."
    )
    max_env_steps: int = Field(
        5_000_000, ge=1, description="Most env steps one experiment may train (all its runs)."
    )
    max_queued: int = Field(100, ge=1, description="Most queued experiments per key.")
    max_running: int | None = Field(
        None,
        ge=1,
        description="Most running experiments per key; default one less than "
        "jobs_concurrency (at least 1), so one key never holds every slot.",
    )
    key_requests_per_second: float = Field(
        10.0,
        gt=0,
        description="Write requests (POST: validate, submit, plan, cancel) each key may make "
        "per second on average; past the burst, 429 with Retry-After.",
    )
    key_request_burst: int = Field(
        30, ge=1, description="Write requests a key may make at once before the rate applies."
    )
    max_streams: int = Field(
        10, ge=1, description="Event streams (SSE) each key may hold open at once; 429 past it."
    )
    intake_queue: int = Field(
        64,
        ge=1,
        description="Specs waiting for an intake worker, all keys together; past it a request "
        "is 503 with Retry-After (the service is busy), never queued without bound.",
    )
    trusted_proxies: list[str] = Field(
        default_factory=list,
        description="Addresses of reverse proxies whose X-Forwarded-For / X-Forwarded-Proto "
        'headers are believed, as JSON (e.g. ["10.0.0.2"]); default none: the client '
        "address is the connection's.",
    )
    header_timeout_seconds: float = Field(
        10.0,
        gt=0,
        description="A connection that has not sent a whole request head in this time is "
        "closed (slow-header clients hold no connection).",
    )
    body_timeout_seconds: float = Field(
        30.0,
        gt=0,
        description="A request body that stalls this long between chunks is answered 408.",
    )
    cancel_grace_seconds: float = Field(
        3.0,
        gt=0,
        description="A cancelled (or timed-out) job still running after this long is killed "
        "with its process group: cancel ends a job within about this, whatever it is doing.",
    )
    lease_seconds: float = Field(
        30.0,
        ge=10,
        description="A restarted service re-queues a job left running once its process has "
        "not renewed its lease (every 5 s) for this long; a job process whose service is gone "
        "(or that stops answering) ends within this long.",
    )
    job_max_seconds: float | None = Field(
        None,
        gt=0,
        description="Wall-clock bound of every job from its start; past it the job ends "
        "failed with the reason. Default: derived from its budget (600 s + its env steps, "
        "or an LM job's tokens, at job_min_steps_per_second).",
    )
    job_min_steps_per_second: float = Field(
        10.0,
        gt=0,
        description="The slowest training the derived wall-clock bound allows (env steps or "
        "generated tokens per second).",
    )
    job_cpu_seconds_per_wall_second: float = Field(
        2.0,
        gt=0,
        description="CPU bound of each job process: its wall-clock bound times this "
        "(enforced by the kernel: the process is ended past it).",
    )

    def running_per_key(self) -> int:
        """`max_running`, or one slot fewer than the service runs (at least 1)."""
        return self.max_running or max(1, self.jobs_concurrency - 1)

    def database_url(self, settings: Settings) -> str:
        return self.jobs_database_url or f"sqlite:///{settings.home / 'jobs.db'}"


@lru_cache
def get_service_settings() -> ServiceSettings:
    """The process's service settings, read once (tests call cache_clear)."""
    return ServiceSettings()


def database_url() -> str:
    """The job store URL for this process's settings."""
    return get_service_settings().database_url(get_settings())
