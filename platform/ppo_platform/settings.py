"""Environment settings (pydantic-settings), read once through the cached `get_settings()`.

Reading settings has no side effects: folders are created where something is written
(`Settings.ensure_home()`, or a `mkdir` beside the write). Relative paths are resolved against
the working directory once, when the settings are built, so no module depends on the cwd later.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

DEFAULT_MAX_ATTEMPTS = 3
# Env packages are imported by name: dotted Python identifiers only (no paths, no ':').
MODULE_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
MAX_MODULE_NAME = 200


JOURNAL_SCHEME = "journal:"  # an Optuna journal file storage: journal:/path/to/file


def module_name_problem(name: str) -> str | None:
    """Why `name` is not a module name the platform will import, or None if it is one."""
    if len(name) > MAX_MODULE_NAME or not MODULE_NAME_PATTERN.fullmatch(name):
        return (
            f"{name!r} is not a module name: use dotted Python identifiers such as "
            "my_envs or my_company.envs (no paths, no ':')."
        )
    return None


def parse_module_names(value: object) -> tuple[str, ...]:
    """'a, b.c' or ['a', 'b.c'] -> ('a', 'b.c'), each a valid module name, duplicates dropped."""
    if value is None:
        return ()
    parts = value.split(",") if isinstance(value, str) else value
    if not isinstance(parts, (list, tuple)):
        raise ValueError("expected comma-separated module names")
    names: list[str] = []
    for part in parts:
        name = str(part).strip()
        problem = module_name_problem(name) if name else None
        if problem:
            raise ValueError(problem)
        if name and name not in names:
            names.append(name)
    return tuple(names)


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
    compiled_threads: int = Field(
        0,
        ge=0,
        description="threads a batch of seeds on the compiled path trains on, each a group of "
        "its seeds (0: one per core this process may use; a sweep's batches take 1, as its "
        "workers already run in parallel).",
    )
    metrics_flush_seconds: float = Field(
        2.0,
        gt=0,
        description="How often buffered metrics are handed to the tracking process in one batch "
        "(written while training runs, so little is left to write when a run ends).",
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
    env_packages: Annotated[tuple[str, ...], NoDecode] = Field(
        (),
        description="Modules imported before any env is built or checked, in every process "
        "that builds one (comma-separated, e.g. `my_envs,my_company.envs`): importing them "
        "registers their gymnasium environments and wrappers. A spec never names code.",
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

    @field_validator("env_packages", mode="before")
    @classmethod
    def _module_names(cls, value: Any) -> tuple[str, ...]:
        return parse_module_names(value)

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

    @property
    def optuna_storage(self) -> str:
        """Where studies live: `optuna_storage_url` if set (a database every node reaches),
        else the journal file every local study shares. The one derivation of it."""
        if self.optuna_storage_url:
            return self.optuna_storage_url
        return f"{JOURNAL_SCHEME}{(self.home / 'optuna' / 'studies.journal').resolve()}"

    def ensure_home(self) -> Path:
        """Create the home folder (for a writer about to put a store in it) and return it."""
        self.home.mkdir(parents=True, exist_ok=True)
        return self.home


def masked_url(url: str) -> str:
    """`url` with any password replaced by `***`: how a URL setting is shown anywhere (pages,
    responses, tags, logs). `user:***@host` keeps the user so an operator knows which one."""
    if "://" not in url or "@" not in url:
        return url
    scheme, rest = url.split("://", 1)
    # The last "@" ends the credentials: a password may hold "@" or "/" unescaped.
    credentials, host = rest.rsplit("@", 1)
    if ":" not in credentials:
        return url
    return f"{scheme}://{credentials.split(':', 1)[0]}:***@{host}"


STORE_KINDS = {
    "sqlite": "a SQLite file",
    "postgresql": "a PostgreSQL database",
    "mysql": "a MySQL database",
    "journal": "a journal file",
    "file": "a folder of files",
    "http": "an MLflow server",
    "https": "an MLflow server",
}


def store_kind(url: str) -> str:
    """What a store is, never where: how answers to tenants name the server's stores (the
    tracking store, a study's storage). The operator's logs and settings keep the URL."""
    scheme = url.split(":", 1)[0].split("+", 1)[0].lower() if ":" in url else "file"
    return STORE_KINDS.get(scheme, f"a {scheme} store")


@lru_cache
def get_settings() -> Settings:
    """The process's settings, read from the environment once (tests call cache_clear)."""
    return Settings()


def variable_of(field: str) -> str:
    """The environment variable that sets `field`."""
    info = Settings.model_fields.get(field)
    alias = info.validation_alias if info is not None else None
    return alias if isinstance(alias, str) else f"PPO_PLATFORM_{field.upper()}"
