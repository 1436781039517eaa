"""`--seeds` text: ranges and lists; empty, negative, duplicated, backwards or too many seeds
are refused naming the flag, the value and the fix."""

from __future__ import annotations

import pytest

from ppo_platform.errors import BadInputError
from ppo_platform.workloads.seeds import MAX_SEEDS, parse_seeds


def test_ranges_and_lists_give_the_seeds_in_order():
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("0,3,9") == [0, 3, 9]
    assert parse_seeds(" 7, 0-2 ") == [7, 0, 1, 2]
    assert parse_seeds(f"0-{MAX_SEEDS - 1}") == list(range(MAX_SEEDS))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "names no seed"),
        ("1,,2", "names no seed"),
        ("-1", "is not a seed"),
        ("x", "is not a seed"),
        ("5-2", "runs backwards"),
        ("1,0-2", "more than once"),
        (f"0-{MAX_SEEDS}", f"more than {MAX_SEEDS} seeds"),
        ("2147483648", "past the largest seed"),
    ],
)
def test_bad_seeds_are_refused_naming_the_flag_value_and_fix(text, says):
    with pytest.raises(BadInputError) as refused:
        parse_seeds(text)
    issue = refused.value.issues[0]
    assert issue.path == "--seeds" and issue.value == text and says in issue.message
    assert "0-15" in issue.fix
