"""The web dashboard: server-rendered pages (Jinja2) at /, their static files at /static, and
the two /ui routes that are the pages' own (the rest is the /v1 API, signed in by the session
cookie). The same API keys as the REST API open a server-side session (the cookie holds only
its id).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from ppo_platform.api.dashboard import actions, pages
from ppo_platform.api.dashboard.auth import LoginRequired
from ppo_platform.api.dashboard.throttle import LoginThrottle

STATIC = Path(__file__).parent / "static"


async def _to_login(_request: Request, _error: Exception) -> Response:
    return RedirectResponse("/login", status_code=303)


def install_dashboard(app: FastAPI) -> None:
    """Mount the dashboard on `app` (after `app.state.service` is set)."""
    service = app.state.service
    app.state.login_throttle = LoginThrottle(service.login_attempts, service.login_window_seconds)
    app.add_exception_handler(LoginRequired, _to_login)
    app.include_router(pages.router)
    app.include_router(actions.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
