"""A small Python client for the REST API (httpx), used by `ppo-platform submit|status|cancel`.

    client = ApiClient("http://127.0.0.1:8000", api_key)
    job = client.submit(Path("specs/cartpole.yaml").read_text())   # an ExperimentPublic
    for event in client.events(job.id):
        print(event.kind, event.data)

Answers come back as the typed models the server renders them with (`ppo_platform.public`, the
OpenAPI document's schemas). HTTP errors come back as the platform's typed errors (by status
code), so a script handles them like the library's: 4xx -> BadInputError / NotFoundError /
ConflictError / LimitError, 5xx or no answer -> UnavailableError (retry later).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

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
from ppo_platform.public import (
    ErrorPublic,
    EventList,
    EventPublic,
    ExperimentList,
    ExperimentPublic,
    MetricHistory,
    MetricList,
    ValidationPublic,
)
from ppo_platform.public.events import EVENT_ADAPTER

API_KEY_ENV = "PPO_PLATFORM_API_KEY"
SERVER_ENV = "PPO_PLATFORM_SERVER"
DEFAULT_SERVER = "http://127.0.0.1:8000"
YAML = {"Content-Type": "application/yaml"}
Model = TypeVar("Model", bound=BaseModel)


def _error_body(response: httpx.Response) -> ErrorPublic:
    try:
        return ErrorPublic.model_validate_json(response.content)
    except ValidationError:
        return ErrorPublic(type="HTTPError", message=response.text[:500])


def _issues(body: ErrorPublic) -> list[SpecIssue]:
    return [
        SpecIssue(
            path=i.path,
            message=i.message,
            value=i.value,
            line=i.line,
            column=i.column,
            fix=i.fix,
            rule=i.rule,
        )
        for i in body.issues
    ] or [SpecIssue("", body.message)]


def error_from_response(response: httpx.Response) -> PlatformError:
    """The typed platform error for an error response."""
    body = _error_body(response)
    message = f"HTTP {response.status_code}: {body.message}"
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

    def _call(self, model: type[Model], method: str, url: str, **kwargs: Any) -> Model:
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError as error:
            raise UnavailableError(
                f"the server at {self.http.base_url} does not answer: {error}"
            ) from error
        if response.status_code >= 400:
            raise error_from_response(response)
        try:
            return model.model_validate_json(response.content)
        except ValidationError as error:
            raise UnavailableError(
                f"the server at {self.http.base_url} answered {url} with a body that is not "
                f"a {model.__name__}: {error}"
            ) from error

    @staticmethod
    def _body(spec: str | dict[str, Any]) -> dict[str, Any]:
        """A spec as YAML text (sent as written: issues keep their line numbers) or as data."""
        if isinstance(spec, str):
            return {"content": spec, "headers": dict(YAML)}
        return {"content": json.dumps(spec), "headers": {"Content-Type": "application/json"}}

    def validate(self, spec: str | dict[str, Any]) -> ValidationPublic:
        return self._call(ValidationPublic, "POST", "/v1/specs/validate", **self._body(spec))

    def submit(
        self, spec: str | dict[str, Any], idempotency_key: str | None = None
    ) -> ExperimentPublic:
        body = self._body(spec)
        if idempotency_key:
            body["headers"]["Idempotency-Key"] = idempotency_key
        return self._call(ExperimentPublic, "POST", "/v1/experiments", **body)

    def get(self, experiment_id: str) -> ExperimentPublic:
        return self._call(ExperimentPublic, "GET", f"/v1/experiments/{experiment_id}")

    def list_experiments(self, **filters: Any) -> ExperimentList:
        params = {k: v for k, v in filters.items() if v is not None}
        return self._call(ExperimentList, "GET", "/v1/experiments", params=params)

    def cancel(self, experiment_id: str) -> ExperimentPublic:
        return self._call(ExperimentPublic, "POST", f"/v1/experiments/{experiment_id}/cancel")

    def alerts(self, experiment_id: str) -> list[EventPublic]:
        return self._call(EventList, "GET", f"/v1/experiments/{experiment_id}/alerts").items

    def metrics(self, experiment_id: str) -> MetricList:
        return self._call(MetricList, "GET", f"/v1/experiments/{experiment_id}/metrics")

    def metric_history(self, experiment_id: str, key: str) -> MetricHistory:
        url = f"/v1/experiments/{experiment_id}/metrics/history"
        return self._call(MetricHistory, "GET", url, params={"key": key})

    def events(self, experiment_id: str, last_event_id: int = 0) -> Iterator[EventPublic]:
        """Every event from `last_event_id` on, live, until the final status; a dropped
        connection is resumed with Last-Event-ID, so none is missed or repeated."""
        while True:
            try:
                for event in self._stream(experiment_id, last_event_id):
                    last_event_id = event.id
                    yield event
                return
            except httpx.TransportError:
                time.sleep(1.0)

    def _stream(self, experiment_id: str, last_event_id: int) -> Iterator[EventPublic]:
        headers = {"Last-Event-ID": str(last_event_id), "Accept": "text/event-stream"}
        url = f"/v1/experiments/{experiment_id}/events"
        with self.http.stream("GET", url, headers=headers, timeout=None) as response:
            if response.status_code >= 400:
                response.read()
                raise error_from_response(response)
            for line in response.iter_lines():
                if line.startswith("data: "):
                    yield EVENT_ADAPTER.validate_json(line[len("data: ") :])
