"""The FastAPI application: `create_app(settings)`; `ppo-platform serve` runs it with uvicorn.

The app opens the job store (migrating it) and starts the job dispatcher in a thread once it
starts (api/services.py; /healthz answers meanwhile), and stops dispatching when it stops. It
imports no torch, SB3 or MLflow: jobs run in their own processes, and MLflow is loaded only by
the metrics route, on first use.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from ppo_platform.api.dashboard import install_dashboard
from ppo_platform.api.errors import install_error_handlers
from ppo_platform.api.key_limits import KeyRateLimiter, StreamSlots
from ppo_platform.api.limits import BodyLimitMiddleware
from ppo_platform.api.routes import (
    artifacts,
    comparisons,
    diagnosis,
    envs,
    events,
    experiments,
    health,
    specs,
    trained_model,
)
from ppo_platform.api.security_headers import SecurityHeadersMiddleware
from ppo_platform.api.services import ServiceOpener
from ppo_platform.envs.packages import import_env_packages
from ppo_platform.jobs import ServiceSettings, get_service_settings
from ppo_platform.jobs.keys import KeyCache
from ppo_platform.settings import Settings, get_settings

VERSION = "1"


def operation_id(route: APIRoute) -> str:
    """The OpenAPI operation id: the route function's name in camelCase (`submitExperiment`),
    so generated clients get readable method names."""
    first, *rest = route.name.split("_")
    return first + "".join(word.capitalize() for word in rest)


def create_app(settings: Settings | None = None, service: ServiceSettings | None = None) -> FastAPI:
    """The REST API over the job service (settings from the environment by default)."""
    settings = settings or get_settings()
    service = service or get_service_settings()
    # Only what the operator configured; a package that cannot be imported stops the start.
    import_env_packages(settings.env_packages)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Requests are short (about a millisecond of Python each): hand the GIL on every 1 ms
        # instead of 5, so a cheap status read does not wait behind other threads.
        sys.setswitchinterval(0.001)
        opener = ServiceOpener(settings, service)
        app.state.opener = opener
        opener.start()  # the server listens meanwhile: /healthz answers at once
        try:
            yield
        finally:
            opener.close()

    app = FastAPI(
        title="ppo-platform",
        version=VERSION,
        description="Validate, plan, submit and follow PPO experiments. Every route but the "
        "health checks needs an API key (`Authorization: Bearer <key>`).",
        lifespan=lifespan,
        generate_unique_id_function=operation_id,
        # One schema per model for requests and responses: `ExperimentSpec`, not `-Input`.
        separate_input_output_schemas=False,
    )
    app.state.settings, app.state.service = settings, service
    app.state.key_cache = KeyCache(service.key_cache_seconds)
    app.state.rate_limiter = KeyRateLimiter(
        service.key_requests_per_second, service.key_request_burst
    )
    app.state.stream_slots = StreamSlots(service.max_streams)
    install_error_handlers(app)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=service.max_body_bytes,
        body_timeout=service.body_timeout_seconds,
    )
    app.add_middleware(SecurityHeadersMiddleware)  # outermost: every response, 413s too
    routers = (health, specs, experiments, events, artifacts, diagnosis, comparisons, envs)
    for module in (*routers, trained_model):
        app.include_router(module.router)
    install_dashboard(app)  # the web pages at /
    return app
