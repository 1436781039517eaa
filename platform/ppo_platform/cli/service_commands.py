"""`ppo-platform serve | keys | submit | status | cancel`: the service and its clients.

Registered on the main Typer app by cli/app.py. `serve` names the app factory as a string (uvicorn
imports `ppo_platform.api.app:create_app`), so nothing else under ppo_platform imports the api.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ppo_platform.cli.env_commands import EnvPackages
from ppo_platform.cli.options import Overrides
from ppo_platform.cli.output import fail
from ppo_platform.errors import EXIT_BAD_INPUT, EXIT_FAILED, PlatformError
from ppo_platform.spec.loader import read_spec_text

if TYPE_CHECKING:
    from ppo_platform.cli.http_client import ApiClient

keys_app = typer.Typer(help="API keys of the REST service (stored only as hashes).")
Server = Annotated[
    str | None,
    typer.Option(help="API server URL (default: $PPO_PLATFORM_SERVER or http://127.0.0.1:8000)."),
]


def serve(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="uvicorn worker processes.")] = 1,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
    env_package: EnvPackages = None,
) -> None:
    """Run the REST API (and the job dispatcher) with uvicorn.

    Settings from the environment (all in the settings reference of the documentation):
    PPO_PLATFORM_INTAKE_WORKERS: processes validating submitted specs (0: threads).
    PPO_PLATFORM_JOB_NICE: niceness of job processes (default 10: the API goes first).
    PPO_PLATFORM_JOBS_CONCURRENCY, PPO_PLATFORM_JOBS_DATABASE_URL: jobs at once, job store.
    PPO_PLATFORM_ENV_PACKAGES (or --env-package): modules whose envs the service can train.
    """
    import uvicorn

    from ppo_platform.cli.slow_clients import HeadDeadlineProtocol
    from ppo_platform.envs.packages import import_env_packages
    from ppo_platform.jobs.config import get_service_settings
    from ppo_platform.settings import get_settings

    try:  # before uvicorn: an env package that cannot be imported is one line, exit 2
        import_env_packages(get_settings().env_packages)
    except PlatformError as error:
        fail(error)

    # X-Forwarded-For / -Proto are believed only from the configured proxies (default none):
    # uvicorn's own default trusts 127.0.0.1, so any local process could claim any address.
    proxies = get_service_settings().trusted_proxies
    uvicorn.run(
        "ppo_platform.api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        access_log=access_log,
        log_level="info",
        http=HeadDeadlineProtocol,
        proxy_headers=bool(proxies),
        forwarded_allow_ips=",".join(proxies) if proxies else "",
    )


def _store():  # type: ignore[no-untyped-def]
    from ppo_platform.jobs import JobStore, database_url
    from ppo_platform.settings import get_settings

    return JobStore(database_url(), get_settings().ensure_home())


@keys_app.command("create")
def keys_create(name: Annotated[str, typer.Argument(help="Owner name of the new key.")]) -> None:
    """Create a key and print it once (only its hash is stored)."""
    from ppo_platform.jobs.keys import create_key

    try:
        key = create_key(_store(), name)
    except PlatformError as error:
        fail(error)
    typer.echo(key)


@keys_app.command("list")
def keys_list() -> None:
    """List key names (never the keys)."""
    from ppo_platform.jobs.keys import list_keys

    for info in list_keys(_store()):
        typer.echo(f"{info.name}\t{info.created_at}\t{'revoked' if info.revoked else 'active'}")


@keys_app.command("revoke")
def keys_revoke(name: Annotated[str, typer.Argument(help="The key's owner name.")]) -> None:
    """Revoke a key: it stops working at once."""
    from ppo_platform.jobs.keys import revoke_key

    try:
        revoke_key(_store(), name)
    except PlatformError as error:
        fail(error)
    typer.echo(f"revoked {name}")


def _client(server: str | None) -> ApiClient:
    from ppo_platform.cli.http_client import API_KEY_ENV, DEFAULT_SERVER, SERVER_ENV, ApiClient

    key = os.environ.get(API_KEY_ENV)
    if not key:
        typer.echo(f"error: set {API_KEY_ENV} to an API key (ppo-platform keys create).", err=True)
        raise typer.Exit(EXIT_BAD_INPUT)
    return ApiClient(server or os.environ.get(SERVER_ENV, DEFAULT_SERVER), key)


def _spec_body(spec: Path, overrides: list[str]) -> str | dict[str, Any]:
    """The spec as written (the server's issues then name its lines), or with `--set`
    applied as data (sent as JSON; the server validates it as usual)."""
    text = read_spec_text(spec)
    if not overrides:
        return text
    from ppo_platform.spec.overrides import apply_overrides
    from ppo_platform.spec.yaml_source import parse_yaml

    data, _ = parse_yaml(text, str(spec))
    if not isinstance(data, dict):
        return text  # not a mapping: the server says what is wrong with it
    return apply_overrides(data, overrides)


def submit(
    spec: Annotated[Path, typer.Argument(help="Path to a YAML experiment spec.")],
    overrides: Overrides = None,
    server: Server = None,
    detach: Annotated[bool, typer.Option(help="Print the id and return at once.")] = False,
) -> None:
    """Submit a spec to the server; print its id, then follow it to the end unless --detach."""
    client = _client(server)
    try:
        job = client.submit(_spec_body(spec, overrides or []))
        typer.echo(job.id)
        if detach:
            return
        for event in client.events(job.id):  # one JSON object a line (jq, scripts)
            data = event.data.model_dump(mode="json", exclude_none=True)
            typer.echo(json.dumps({"id": event.id, "kind": event.kind, "data": data}))
        job = client.get(job.id)
    except PlatformError as error:
        fail(error)
    result = job.result.model_dump(mode="json") if job.result else None
    ended = {"status": job.status.value, "mlflow_run_id": job.mlflow_run_id, "result": result}
    typer.echo(json.dumps({**ended, "error": job.error}))
    from ppo_platform.public import ExperimentStatus  # here: `run` does not pay for the models

    if job.status != ExperimentStatus.SUCCEEDED:
        raise typer.Exit(EXIT_FAILED)


def status(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.")], server: Server = None
) -> None:
    """Print an experiment's status, progress and result as JSON."""
    try:
        job = _client(server).get(experiment_id)
    except PlatformError as error:
        fail(error)
    typer.echo(job.model_dump_json(indent=2))


def cancel(
    experiment_id: Annotated[str, typer.Argument(help="Experiment id.")], server: Server = None
) -> None:
    """Cancel an experiment (queued: never starts; running: stops within seconds)."""
    try:
        job = _client(server).cancel(experiment_id)
    except PlatformError as error:
        fail(error)
    typer.echo(f"{experiment_id}: {job.status.value} (cancel requested)")


def register(app: typer.Typer) -> None:
    """Add the service commands to the main CLI."""
    for command in (serve, submit, status, cancel):
        app.command()(command)
    app.add_typer(keys_app, name="keys")
