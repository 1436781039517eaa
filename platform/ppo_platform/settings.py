"""Environment settings (pydantic-settings), read once through the cached `get_settings()`."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


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

    @property
    def tracking_uri(self) -> str:
        if self.mlflow_tracking_uri:
            return self.mlflow_tracking_uri
        return f"sqlite:///{(self.home / 'mlflow.db').resolve()}"

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


@lru_cache
def get_settings() -> Settings:
    settings = Settings()
    settings.home.mkdir(parents=True, exist_ok=True)
    return settings
