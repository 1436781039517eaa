"""The dashboard's HTML pages: login, experiments, one experiment, submit, plan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from ppo_platform.api.dashboard.auth import PageViewer, Viewer, check_viewer_csrf, read_form
from ppo_platform.api.dashboard.details import error_text, experiment_context
from ppo_platform.api.dashboard.markdown import render
from ppo_platform.api.dashboard.throttle import LoginThrottle
from ppo_platform.api.dashboard.view import KINDS, STATUSES, row
from ppo_platform.api.deps import SecretDep, ServiceDep, SettingsDep, StoreDep, owner_of_key
from ppo_platform.api.session import COOKIE, MAX_AGE_SECONDS, check_origin, csrf_token
from ppo_platform.errors import NotFoundError, PlatformError
from ppo_platform.jobs.intake import plan_for_service
from ppo_platform.jobs.listing import experiment_summaries
from ppo_platform.jobs.web_sessions import close_session, open_session

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
PAGE_ROWS = 500


def _page(
    request: Request, name: str, viewer: Viewer, secret: bytes, code: int = 200, **context: Any
) -> Response:
    csrf = csrf_token(secret, viewer.session)
    context = {"owner": viewer.owner, "csrf": csrf, "page": name.removesuffix(".html"), **context}
    return templates.TemplateResponse(request, name, context, status_code=code, headers=_NO_STORE)


_NO_STORE = {"Cache-Control": "no-store"}


@router.get("/login", response_class=HTMLResponse)
def login_form(request: Request) -> Response:
    """The login form: paste an API key."""
    return templates.TemplateResponse(request, "login.html", {"owner": None, "error": None})


@router.post("/login")
async def login(request: Request, store: StoreDep, service: ServiceDep) -> Response:
    """Check the key, then open a server-side session; its random id is the cookie."""
    check_origin(request)
    throttle: LoginThrottle = request.app.state.login_throttle
    address = request.client.host if request.client else "-"
    if (wait := throttle.retry_after(address)) is not None:
        return _login_refused(request, 429, _too_many(wait), {"Retry-After": str(wait)})
    key = (await read_form(request)).get("api_key", "").strip()
    owner = await owner_of_key(request, store, service, key) if key else None
    if owner is None:
        throttle.failed(address)
        error = "unknown or revoked API key: paste a key from `ppo-platform keys create`."
        return _login_refused(request, 401, error, {})
    session_id = await run_in_threadpool(open_session, store, owner, key, MAX_AGE_SECONDS)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=MAX_AGE_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _too_many(wait: int) -> str:
    return f"too many failed logins from this address: try again in {wait} s."


def _login_refused(request: Request, code: int, error: str, headers: dict[str, str]) -> Response:
    context = {"owner": None, "error": error}
    return templates.TemplateResponse(
        request, "login.html", context, status_code=code, headers=headers
    )


@router.post("/logout")
async def logout(
    request: Request, viewer: PageViewer, store: StoreDep, secret: SecretDep
) -> Response:
    """End the session on the server (a replayed cookie opens nothing) and drop the cookie."""
    check_viewer_csrf(request, secret, viewer, (await read_form(request)).get("csrf_token"))
    await run_in_threadpool(close_session, store, viewer.session.id)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, httponly=True, samesite="strict")
    return response


def _experiment_rows(store: Any, owner: str, status: str | None, kind: str | None) -> list[Any]:
    found = experiment_summaries(store, owner, status=status, kind=kind, limit=PAGE_ROWS)
    return [row(summary, summary.env_id or "-") for summary in found]


@router.get("/", response_class=HTMLResponse)
async def experiments_page(
    request: Request,
    viewer: PageViewer,
    store: StoreDep,
    secret: SecretDep,
    status: str | None = None,
    kind: str | None = None,
) -> Response:
    """The key's experiments, newest first, filtered by status and kind."""
    status = status if status in STATUSES else None
    kind = kind if kind in KINDS else None
    rows = await run_in_threadpool(_experiment_rows, store, viewer.owner, status, kind)
    return _page(
        request,
        "experiments.html",
        viewer,
        secret,
        rows=rows,
        status=status,
        kind=kind,
        statuses=STATUSES,
        kinds=KINDS,
        limit=PAGE_ROWS,
    )


@router.get("/experiments/{experiment_id}", response_class=HTMLResponse)
async def experiment_page(
    experiment_id: str,
    request: Request,
    viewer: PageViewer,
    store: StoreDep,
    settings: SettingsDep,
    secret: SecretDep,
) -> Response:
    """One experiment: live curves, alerts, spec, links, and its sweep report or trials."""
    try:
        job = await run_in_threadpool(store.get, experiment_id, viewer.owner)
    except NotFoundError as error:
        return _page(request, "missing.html", viewer, secret, message=str(error), code=404)
    context = await run_in_threadpool(experiment_context, job, settings)
    return _page(request, "experiment.html", viewer, secret, **context)


@router.get("/submit", response_class=HTMLResponse)
def submit_page(request: Request, viewer: PageViewer, secret: SecretDep) -> Response:
    """Paste or upload a spec; it is validated as you type."""
    return _page(request, "submit.html", viewer, secret, spec_text="")


@router.post("/submit", response_class=HTMLResponse)
async def submit_prefilled(request: Request, viewer: PageViewer, secret: SecretDep) -> Response:
    """The plan page's "submit this spec": the submit page with that spec filled in."""
    form = await read_form(request)
    check_viewer_csrf(request, secret, viewer, form.get("csrf_token"))
    return _page(request, "submit.html", viewer, secret, spec_text=form.get("spec_yaml", ""))


@router.get("/plan", response_class=HTMLResponse)
def plan_form(request: Request, viewer: PageViewer, secret: SecretDep) -> Response:
    """Env id and budget in; a spec and its skill-ppo-trainer plan out."""
    return _page(request, "plan.html", viewer, secret, plan=None, env_id="", budget="")


@router.post("/plan", response_class=HTMLResponse)
async def plan_page(request: Request, viewer: PageViewer, secret: SecretDep) -> Response:
    form = await read_form(request)
    check_viewer_csrf(request, secret, viewer, form.get("csrf_token"))
    env_id, budget = form.get("env_id", "").strip(), form.get("budget", "").strip()
    if not budget.isdigit() or not 0 < int(budget) <= 10**10:
        error = f"budget {budget!r} is not a whole number of env steps: enter e.g. 100000."
        return _page(
            request,
            "plan.html",
            viewer,
            secret,
            plan=None,
            env_id=env_id,
            budget=budget,
            error=error,
        )
    try:
        plan = await run_in_threadpool(plan_for_service, env_id, int(budget), "auto", [])
    except PlatformError as failure:
        return _page(
            request,
            "plan.html",
            viewer,
            secret,
            code=422,
            plan=None,
            env_id=env_id,
            budget=budget,
            error=error_text(failure),
        )
    return _page(
        request, "plan.html", viewer, secret, plan=plan, env_id=env_id, budget=budget, render=render
    )
