"""End to end in Chromium: a run submitted from the page streams its progress, KL and alert
live; a second run is cancelled from its page; a finished sweep shows its report and a finished
study its trials and best spec."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

# KL alert at 0.0005: the first update of CartPole trips it, so an alert shows within seconds.
ALERTING_CARTPOLE = """name: dashboard-cartpole
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 64}
update: {epochs: 10, minibatch_size: 64}
budget: {total_timesteps: 6144}
evaluation: {every_timesteps: 2048, episodes: 2}
diagnostics: {kl_healthy_max: 0.0005, kl_alert: 0.0005}
"""
PROBE = """() => [
  Number(document.getElementById('progress').value),
  Number(document.getElementById('chart-kl').dataset.points || 0),
  document.getElementById('status').textContent.trim()]"""


def _watch(page: Any, timeout: float = 180) -> list[tuple[float, int, str]]:
    """(progress %, KL points, status) every 0.2 s until the status badge is final."""
    seen: list[tuple[float, int, str]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            progress, points, status = page.evaluate(PROBE)
        except Exception:  # the page reloads once when the run ends
            continue
        seen.append((progress, points, status))
        if status in ("succeeded", "failed", "cancelled"):
            return seen
        time.sleep(0.2)
    raise AssertionError(f"no final status after {timeout} s: {seen[-3:]}")


def test_a_run_submitted_from_the_page_streams_progress_kl_and_an_alert(tab_factory, keys) -> None:
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go("/submit")
    tab.page.get_by_label("Spec (YAML)").fill(ALERTING_CARTPOLE)
    submit = tab.page.get_by_role("button", name="Submit experiment")
    expect(submit).to_be_enabled(timeout=15_000)
    submit.click()
    tab.page.wait_for_url("**/experiments/*")
    expect(tab.page.locator("#alerts li").first).to_contain_text("approx KL", timeout=120_000)
    expect(tab.page.locator("#alerts li .advice").first).to_contain_text("Advice:")
    seen = _watch(tab.page)
    running = [s for s in seen if s[2] == "running"]
    assert len({points for _, points, _ in running}) >= 2, seen  # the KL chart grew live
    assert len({progress for progress, _, _ in running}) >= 2, seen  # so did the bar
    assert seen[-1][2] == "succeeded", seen[-1]
    tab.page.wait_for_load_state()
    expect(tab.page.locator("#progress")).to_have_attribute("value", "100")
    for chart in ("return", "clip", "ev"):  # every progress event feeds every curve
        expect(tab.page.locator(f"#chart-{chart}")).to_have_attribute(
            "data-points", re.compile(r"^[1-9]\d*$")
        )
    assert tab.errors == []


def test_a_second_run_is_cancelled_from_its_page(tab_factory, keys, alice, post_spec, tiny) -> None:
    job = post_spec(alice, tiny(400_000, name="to-cancel", every=50_000)).json()
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go(f"/experiments/{job['id']}")
    tab.page.get_by_role("button", name="Cancel experiment").click()
    expect(tab.page.locator("#status")).to_have_text("cancelled", timeout=60_000)
    assert alice.get(f"/v1/experiments/{job['id']}").json()["status"] == "cancelled"
    assert tab.errors == []
