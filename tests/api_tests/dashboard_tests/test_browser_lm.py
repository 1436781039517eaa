"""End to end in Chromium: a language-model run's page charts its reward (lm/reward_mean, with
the held-out evaluation) and its KL to the reference (lm/kl_ref, with the target line)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

from ppo_platform.settings import Settings
from ppo_platform.training.lm_demo import init_demo
from tests.api_tests.conftest import submit, wait_for

pytestmark = pytest.mark.slow
os.environ.setdefault("HF_HUB_OFFLINE", "1")
SPEC = Path(__file__).resolve().parents[3] / "specs" / "lm_arithmetic.yaml"


def short_lm_spec() -> str:
    data = yaml.safe_load(SPEC.read_text())
    data["name"] = "dashboard-lm"
    data["budget"]["updates"] = 3
    data["evaluation"].update(every_updates=2, max_prompts=16)
    data["lm"]["prompts_per_update"] = 8
    data["update"]["minibatch_size"] = 4
    return yaml.safe_dump(data)


def test_an_lm_run_page_charts_reward_and_kl_to_the_reference(
    tab_factory, keys, alice, server
) -> None:
    init_demo(Settings(home=server.home), sft_steps=5, force=True)
    response = submit(alice, short_lm_spec())
    assert response.status_code == 202, response.text
    job = wait_for(alice, response.json()["id"], timeout=600)
    assert job["status"] == "succeeded", job["error"]
    assert job["diagnostics"]["kl_ref"] is not None  # the job's latest health signals
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go(f"/experiments/{job['id']}")
    expect(tab.page.get_by_text("Reward (lm/reward_mean per update")).to_be_visible()
    # The demo holds a fixed beta (no target): the chart has no target line to name.
    expect(tab.page.get_by_text("KL to the reference (lm/kl_ref)")).to_be_visible()
    for chart in ("return", "klref", "kl", "beta"):  # replayed from the stored events
        expect(tab.page.locator(f"#chart-{chart}")).to_have_attribute(
            "data-points", re.compile(r"^[1-9]\d*$"), timeout=30_000
        )
    assert tab.errors == []
