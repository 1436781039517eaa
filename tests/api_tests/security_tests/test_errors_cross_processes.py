"""Finding 1: a spec error whose text holds `{` or `}` comes back whole from the intake
workers, and never breaks the pool that other keys' requests share."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest

from ppo_platform.errors import ConflictError, SpecError, SpecIssue

# Each made the intake pool break (503 for every request queued behind it) before the fix.
BRACED_SPECS = {
    "a key of braces": '{"}": 1, "name": "x", "env": "CartPole-v1"}',
    "a name with a brace": 'name: "a{b"\nenv: CartPole-v1\n',
    "an unclosed flow mapping": "name: x\nenv: {id: CartPole-v1\n",
    "braces in env kwargs": (
        "name: x\nenv: {id: CartPole-v1, kwargs: {disable_env_checker: false}}\n"
    ),
}


def test_an_issue_error_survives_pickling_with_braces_and_odd_values() -> None:
    issue = SpecIssue("a{b}", "expected ',' or '}'", value={"}": object()}, line=1, fix="{x}")
    for kind in (SpecError, ConflictError):
        error = kind([issue], source="re{quest}")
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is kind and back.source == "re{quest}"
        assert str(back) == str(error) and back.to_dict() == error.to_dict()
        assert back.issues[0].path == "a{b}" and back.issues[0].line == 1


@pytest.mark.parametrize("name", list(BRACED_SPECS))
def test_a_braced_spec_error_is_a_422_and_other_keys_are_unaffected(
    server, alice, bob, name
) -> None:
    text = BRACED_SPECS[name]
    valid = "name: fine\nenv: CartPole-v1\n"

    def validate(client, body: str) -> int:
        response = client.post(
            "/v1/specs/validate", content=body, headers={"Content-Type": "application/yaml"}
        )
        return response.status_code

    with ThreadPoolExecutor(8) as pool:
        bad = [pool.submit(validate, alice, text) for _ in range(4)]
        good = [pool.submit(validate, bob, valid) for _ in range(12)]
        statuses_bad = [f.result() for f in bad]
        statuses_good = [f.result() for f in good]
    assert set(statuses_bad) == {422}, statuses_bad
    assert set(statuses_good) == {200}, statuses_good
    response = alice.post(
        "/v1/specs/validate", content=text, headers={"Content-Type": "application/yaml"}
    )
    body = response.json()
    assert response.status_code == 422 and body["type"] == "SpecError", body
    assert body["issues"] and all(len(i["message"]) > 1 for i in body["issues"])
