"""Errors at the edge: typed platform errors -> their HTTP status (errors.http_status, the one
mapping) and every error -> the one JSON shape `ErrorPublic` {type, message, issues}.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from ppo_platform.api.schemas import ErrorPublic, IssuePublic
from ppo_platform.errors import IssueError, LimitError, PlatformError, http_status

log = logging.getLogger("api")
HTTP_TYPES = {
    400: "BadRequest",
    401: "Unauthorized",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    413: "PayloadTooLarge",
    415: "UnsupportedMediaType",
}

ERROR_TEXTS = {
    400: "The body is not JSON.",
    401: "Missing or unknown API key.",
    404: "No such experiment (or it belongs to another key), or no such item of it.",
    408: "The request body stalled (PPO_PLATFORM_BODY_TIMEOUT_SECONDS).",
    409: "Conflicts with the current state (e.g. cancel a finished experiment).",
    413: "Request body too large.",
    415: "Unsupported content type.",
    422: "Invalid input: every issue listed.",
    429: "Over a per-key limit (`Retry-After` says when to try again, when known).",
    503: "A store does not answer, or the job service is not open.",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of the error statuses a route can answer (all `ErrorPublic`)."""
    return {s: {"model": ErrorPublic, "description": ERROR_TEXTS[s]} for s in statuses}


# Every route that needs an API key: no key (401), and the job service not open (503).
ERROR_RESPONSES = error_responses(401, 503)


class AsciiJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: an error may echo input holding lone surrogates, which
    cannot be encoded as UTF-8."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_response(
    status: int,
    kind: str,
    message: str,
    issues: list[dict[str, Any]] | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = ErrorPublic(type=kind, message=message, issues=[IssuePublic(**i) for i in issues or []])
    headers = dict(headers or {})
    if status == 401:
        headers.setdefault("WWW-Authenticate", "Bearer")
    return AsciiJSONResponse(body.model_dump(mode="json"), status_code=status, headers=headers)


async def _platform_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, PlatformError)
    if isinstance(error, IssueError):
        count = len(error.issues)
        message = f"{count} issue(s): " + "; ".join(i.format(error.source) for i in error.issues)
        return error_response(http_status(error), type(error).__name__, message, error.to_dict())
    response = error_response(http_status(error), type(error).__name__, str(error))
    if isinstance(error, LimitError) and error.retry_after is not None:
        response.headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
    return response


def allowed_methods(request: Request) -> str | None:
    """The methods the OpenAPI document lists for the request's path (None for a path it does
    not describe). Starlette's own 405 names only the first route's: GET and POST on
    /v1/experiments are two routes."""
    table: list[tuple[re.Pattern[str], str]] | None = getattr(request.app.state, "allow", None)
    if table is None:
        table = [
            (re.compile(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(path))), methods)
            for path, item in request.app.openapi()["paths"].items()
            for methods in [", ".join(sorted(method.upper() for method in item))]
        ]
        request.app.state.allow = table
    path = request.url.path
    return next((methods for pattern, methods in table if pattern.fullmatch(path)), None)


async def _http_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, HTTPException)
    kind = HTTP_TYPES.get(error.status_code, "HTTPError")
    headers = dict(error.headers or {})
    if error.status_code == 405:  # RFC 9110: a 405 names the methods the resource has
        headers["Allow"] = allowed_methods(request) or headers.get("Allow", "")
    return error_response(error.status_code, kind, str(error.detail), headers=headers)


def _request_fix(error: Mapping[str, Any]) -> str | None:
    """What to send instead, where pydantic's error says: one of a field's allowed values."""
    if error.get("type") == "literal_error":
        return f"use one of {error.get('ctx', {}).get('expected', '')}."
    return None


async def _request_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    issues = [
        {
            "path": ".".join(str(part) for part in e.get("loc", ())),
            "message": str(e.get("msg", "")),
            "value": e.get("input") if isinstance(e.get("input"), (int, float, str)) else None,
            "fix": _request_fix(e),
        }
        for e in error.errors()
    ]
    message = f"{len(issues)} issue(s) in the request: " + "; ".join(
        f"{i['path']}: {i['message']}" for i in issues
    )
    return error_response(422, "RequestValidationError", message, issues)


async def _client_gone(request: Request, _error: Exception) -> JSONResponse:
    """The client closed the connection while its body was read: nothing went wrong here, and
    nobody reads the answer. One line, not a traceback (a client could fill the log)."""
    log.info("client went away during %s %s", request.method, request.url.path)
    return error_response(400, "ClientDisconnected", "the client closed the connection.")


async def _unexpected(_request: Request, error: Exception) -> JSONResponse:
    log.exception("unexpected error", exc_info=error)
    return error_response(500, "InternalError", "an unexpected error; see the server log.")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(PlatformError, _platform_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _request_error)
    app.add_exception_handler(ClientDisconnect, _client_gone)
    app.add_exception_handler(Exception, _unexpected)
