"""Environment settings (pydantic-settings), read once through the cached `get_settings()`.

Reading settings has no side effects: folders are created where something is written
(`Settings.ensure_home()`, or a `mkdir` beside the write). Relative paths are resolved against
the working directory once, when the settings are built, so no module depends on the cwd later.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

DEFAULT_MAX_ATTEMPTS = 3


class Settings(BaseSettings):
    """Where things go. Every field can be set as PPO_PLATFORM_<FIELD> in the environment."""

    model_config = SettingsConfigDict(env_prefix="PPO_PLATFORM_", extra="ignore")

    home: Path = Field(
        Path(".ppo_platform"),
        description="Root of the local stores: MLflow database, run folders, checkpoints.",
    )
    mlflow_tracking_uri: str | None = Field(
        None,
        validation_alias="MLFLOW_TRACKING_URI",
        description="MLflow tracking URI; default sqlite:///<home>/mlflow.db.",
    )
    torch_threads: int = Field(
        1,
        ge=1,
        description="torch intra-op threads per training process (small nets: 1 is fastest).",
    )
    metrics_flush_seconds: float = Field(
        10.0, gt=0, description="How often buffered metrics are written to MLflow in one batch."
    )
    memory_budget_bytes: int | None = Field(
        None,
        ge=1,
        description="Largest estimated memory one run may need (refused above it at "
        "validation); default: half of this machine's physical memory.",
    )
    disk_budget_bytes: int | None = Field(
        None,
        ge=1,
        description="Largest estimated checkpoint disk one run may need; default: half of "
        "the free disk under the platform home.",
    )
    outputs_dir: Path = Field(
        Path("outputs"),
        description="Default folder for generated files (tune writes outputs/tune-<study>).",
    )

    lm_dir: Path | None = Field(
        None,
        description="Folder of language models and prompt files for `algorithm: ppo_lm`: "
        "relative paths in an LM spec resolve inside it, and specs from the REST API may "
        "name nothing outside it; default <home>/lm.",
    )

    executor: Literal["local", "ray"] = Field(
        "local",
        description="Where jobs, sweep members and tuning workers run: `local` processes or "
        "`ray` tasks on the cluster at `ray_address` (needs the `ray` extra).",
    )
    ray_address: str | None = Field(
        None, description="Ray cluster address (host:port of the head) when executor is `ray`."
    )
    ray_num_cpus: float = Field(1.0, gt=0, description="CPUs each Ray task declares.")
    ray_num_gpus: float = Field(0.0, ge=0, description="GPUs each Ray task declares.")
    max_attempts: int = Field(
        DEFAULT_MAX_ATTEMPTS,
        ge=1,
        description="Runs of a job, sweep member or tuning worker whose worker process or node "
        "keeps dying (each run resumes from the last checkpoint) before it is failed.",
    )
    optuna_storage_url: str | None = Field(
        None,
        description="Optuna storage of studies (e.g. postgresql+psycopg://...); default a "
        "journal file under the home.",
    )

    @field_validator("home", "outputs_dir", "lm_dir")
    @classmethod
    def _absolute(cls, path: Path | None) -> Path | None:
        return None if path is None else path.expanduser().resolve()

    @property
    def lm_folder(self) -> Path:
        """Where LM specs' relative paths resolve (`ppo-platform lm init-demo` writes here)."""
        return self.lm_dir if self.lm_dir is not None else self.home / "lm"

    @property
    def tracking_uri(self) -> str:
        if self.mlflow_tracking_uri:
            return self.mlflow_tracking_uri
        return f"sqlite:///{self.home / 'mlflow.db'}"

    @property
    def artifact_root(self) -> Path | None:
        """Where new experiments keep artifacts; None when a tracking server manages them.

        MLflow's default for a database store is ./mlruns in the working directory.
        """
        if self.tracking_uri.split(":", 1)[0] in {"http", "https", "databricks"}:
            return None
        return self.home / "artifacts"

    @property
    def runs_dir(self) -> Path:
        return self.home / "runs"

    def ensure_home(self) -> Path:
        """Create the home folder (for a writer about to put a store in it) and return it."""
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home


@lru_cache
def get_settings() -> Settings:
    """The process's settings, read from the environment once (tests call cache_clear)."""
    return Settings()
