"""The OpenAPI document, fuzzed with schemathesis against the real server: no 5xx, and every
response (status, content type, body) is one the document describes."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.slow
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


EXAMPLES_PER_OPERATION = 20


def test_every_operation_answers_within_its_schema(server, keys) -> None:
    schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    headers = {"Authorization": f"Bearer {keys['alice']}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=server.url, headers=headers, checks=CHECKS, timeout=30)

        fuzz()
