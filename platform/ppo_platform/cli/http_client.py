"""A small Python client for the REST API (httpx), used by `ppo-platform submit|status|cancel`.

    client = ApiClient("http://127.0.0.1:8000", api_key)
    job = client.submit(Path("specs/cartpole.yaml").read_text())
    for event in client.events(job["id"]):
        print(event["kind"], event["data"])

HTTP errors come back as the platform's typed errors (by status code), so a script handles
them like the library's: 4xx -> BadInputError / NotFoundError / ConflictError / LimitError,
5xx or no answer -> UnavailableError (retry later).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx

from ppo_platform.errors import (
    BadInputError,
    ConflictError,
    LimitError,
    NotFoundError,
    PlatformError,
    SpecError,
    SpecIssue,
    UnavailableError,
)

API_KEY_ENV = "PPO_PLATFORM_API_KEY"
SERVER_ENV = "PPO_PLATFORM_SERVER"
DEFAULT_SERVER = "http://127.0.0.1:8000"


def _issues(body: dict[str, Any]) -> list[SpecIssue]:
    return [
        SpecIssue(
            path=i.get("path", ""),
            message=i.get("message", ""),
            value=i.get("value"),
            line=i.get("line"),
            column=i.get("column"),
            fix=i.get("fix"),
            rule=i.get("rule"),
        )
        for i in body.get("issues") or []
    ] or [SpecIssue("", str(body.get("message", "")))]


def error_from_response(response: httpx.Response) -> PlatformError:
    """The typed platform error for an error response."""
    try:
        body = response.json()
    except ValueError:
        body = {"message": response.text}
    message = f"HTTP {response.status_code}: {body.get('message', '')}"
    status = response.status_code
    if status == 422:
        return SpecError(_issues(body), "server")
    if status == 404:
        return NotFoundError(message)
    if status == 409:
        return ConflictError(_issues(body), "server")
    if status == 429:
        return LimitError(message)
    if status >= 500:
        return UnavailableError(message)
    return BadInputError([SpecIssue("", message)], "server")


class ApiClient:
    """One server, one API key."""

    def __init__(self, server: str, api_key: str, timeout: float = 30.0) -> None:
        self.http = httpx.Client(
            base_url=server.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=timeout,
        )

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, url: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            raise UnavailableError(
                f"the server at {self.http.base_url} does not answer: {error}"
            ) from error
        if response.status_code >= 400:
            raise error_from_response(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def validate(self, spec_text: str) -> dict[str, Any]:
        headers = {"Content-Type": "application/yaml"}
        return self._call("POST", "/v1/specs/validate", content=spec_text, headers=headers)  # type: ignore[no-any-return]

    def submit(self, spec_text: str, idempotency_key: str | None = None) -> dict[str, Any]:
        headers = {"Content-Type": "application/yaml"}
        if idempotency_key:
            headers["Idempotency-Key"] = idempotency_key
        return self._call("POST", "/v1/experiments", content=spec_text, headers=headers)  # type: ignore[no-any-return]

    def get(self, experiment_id: str) -> dict[str, Any]:
        return self._call("GET", f"/v1/experiments/{experiment_id}")  # type: ignore[no-any-return]

    def list_experiments(self, **filters: Any) -> dict[str, Any]:
        params = {k: v for k, v in filters.items() if v is not None}
        return self._call("GET", "/v1/experiments", params=params)  # type: ignore[no-any-return]

    def cancel(self, experiment_id: str) -> dict[str, Any]:
        return self._call("POST", f"/v1/experiments/{experiment_id}/cancel")  # type: ignore[no-any-return]

    def alerts(self, experiment_id: str) -> list[dict[str, Any]]:
        return self._call("GET", f"/v1/experiments/{experiment_id}/alerts")["items"]  # type: ignore[no-any-return]

    def events(self, experiment_id: str, last_event_id: int = 0) -> Iterator[dict[str, Any]]:
        """Every event from `last_event_id` on, live, until the final status; a dropped
        connection is resumed with Last-Event-ID, so none is missed or repeated."""
        while True:
            try:
                for event in self._stream(experiment_id, last_event_id):
                    last_event_id = event["id"]
                    yield event
                return
            except httpx.TransportError:
                time.sleep(1.0)

    def _stream(self, experiment_id: str, last_event_id: int) -> Iterator[dict[str, Any]]:
        headers = {"Last-Event-ID": str(last_event_id), "Accept": "text/event-stream"}
        url = f"/v1/experiments/{experiment_id}/events"
        with self.http.stream("GET", url, headers=headers, timeout=None) as response:
            if response.status_code >= 400:
                response.read()
                raise error_from_response(response)
            for line in response.iter_lines():
                if line.startswith("data: "):
                    yield json.loads(line[len("data: ") :])
