"""A finished sweep's page shows its comparison report; a finished study's its trials, best
value and a best_spec.yaml download. The sweep's grid carries a value that once ran script on
this page (markdown that nests a link in an image's alt): it shows as text, runs nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.slow

BASE = """env: {id: ppo_platform/GridWorld-v0, n_envs: 1}
rollout: {n_steps: 64}
update: {epochs: 2, minibatch_size: 64}
budget: {total_timesteps: 256}
evaluation: {every_timesteps: 256, episodes: 2}
"""
PAYLOAD = "![[t](http://x/y)](http://x/onerror=alert``//)"
SWEEP = (
    "name: dash-sweep\n" + BASE + "sweep: {grid: {update.epochs: [1, 2], "
    f"tracking.tags.note: ['{PAYLOAD}']}}, seeds: [0]}}\n"
)
TUNE = (
    "name: dash-tune\n" + BASE + "tune:\n  n_trials: 2\n  seeds_per_trial: 1\n"
    "  sampler: {type: random, seed: 0}\n"
    "  space:\n    update.epochs: {type: int, low: 1, high: 3}\n"
)


def test_a_finished_sweep_and_study_show_report_trials_and_best_spec(
    tab_factory, keys, alice, bob, post_spec, wait, tmp_path
) -> None:
    # Two keys: each may run one job at a time, so the sweep and the study run side by side.
    sweep = post_spec(alice, SWEEP).json()
    study = post_spec(bob, TUNE).json()
    assert wait(alice, sweep["id"], timeout=300)["status"] == "succeeded"
    finished = wait(bob, study["id"], timeout=300)
    assert finished["status"] == "succeeded"
    tab, tab_bob = tab_factory(), tab_factory()
    tab.login(keys["alice"])
    tab_bob.login(keys["bob"])

    tab.go(f"/experiments/{sweep['id']}")
    report = tab.page.locator("#report")
    expect(report.locator("h2").first).to_contain_text("Sweep report: dash-sweep")
    expect(report.locator("table").first.locator("tbody tr")).to_have_count(2)
    plots = report.locator("img[src*='/artifacts/']").all()
    assert plots
    for image in plots:  # returns.png, kl.png ... load from artifacts
        assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    # The grid value reached the report, and not one element of it carries a handler (the
    # CSP would also block one, and log the attempt as a console error: tab.errors).
    expect(report.locator("table").first).to_contain_text("tracking.tags.note")
    handlers = report.evaluate(
        "r => [...r.querySelectorAll('*')].flatMap(e => [...e.attributes])"
        ".filter(a => a.name.startsWith('on')).length"
    )
    assert handlers == 0
    # The payload's image of another site is kept as an image and blocked by the CSP: the only
    # error the page may log. An inline handler's would name script-src.
    blocked = "Loading the image 'http://x/"
    assert [e for e in tab.errors if not e.startswith(blocked)] == [], tab.errors

    tab = tab_bob
    tab.go(f"/experiments/{study['id']}")
    trials = tab.page.locator("#trials tbody tr")
    expect(trials).to_have_count(2)
    expect(trials.first).to_contain_text("COMPLETE")
    expect(trials.first).to_contain_text("update.epochs=")
    best = finished["result"]["best_value"]
    expect(tab.page.locator("#best-value")).to_have_text(f"{best:.4g}")
    with tab.page.expect_download() as download:
        tab.page.get_by_role("link", name="Download best_spec.yaml").click()
    saved = tmp_path / "best_spec.yaml"
    download.value.save_as(saved)
    assert saved.read_text() == finished["result"]["best_spec"]
    assert tab.errors == []
