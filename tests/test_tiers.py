"""The test tiers of tests/tiers.py: each entry names a place that exists, and a module is in the
integration tier exactly when it lies under one."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiers import INTEGRATION, is_integration

TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("entry", INTEGRATION)
def test_every_integration_entry_names_a_test_folder_or_module(entry: str):
    assert (TESTS / entry).exists(), f"tests/tiers.py names {entry}, which is not under tests/"


def test_a_module_is_integration_exactly_when_it_lies_under_an_entry():
    assert is_integration("api_tests/test_seeds_jobs.py")
    assert is_integration("ppo_platform_tests/cli/test_cli_seeds.py")
    assert is_integration("ppo_platform_tests/doctor/test_real_runs.py")
    assert not is_integration("ppo_platform_tests/doctor/test_engine.py")
    assert not is_integration("ppo_platform_tests/spec/test_seeds.py")
    assert not is_integration("api_tests_elsewhere/test_x.py")  # a prefix of a name is not a folder


def test_this_module_is_in_the_quick_tier(request: pytest.FixtureRequest):
    assert request.node.get_closest_marker("integration") is None
    assert is_integration("test_installed_namespace.py")
