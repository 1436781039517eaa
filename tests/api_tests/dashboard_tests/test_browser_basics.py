"""The dashboard in Chromium: login, isolation between keys, the submit page's refusals, plan."""

from __future__ import annotations

import re

from playwright.sync_api import expect

K31 = """name: too-many-epochs
env: {id: CartPole-v1, n_envs: 2}
rollout: {n_steps: 64}
update:
  minibatch_size: 64
  epochs: 31
budget: {total_timesteps: 2048}
"""


def test_a_wrong_key_is_refused_on_the_login_form(tab_factory) -> None:
    tab = tab_factory()
    tab.go("/")
    assert tab.page.url.endswith("/login")
    tab.page.get_by_label("API key").fill("not-a-key")
    tab.page.get_by_role("button", name="Log in").click()
    expect(tab.page.get_by_role("alert")).to_contain_text("unknown or revoked API key")
    assert tab.errors == [] or all("401" in e for e in tab.errors)


def test_a_second_key_sees_none_of_the_first_keys_experiments(
    tab_factory, alice, keys, post_spec, tiny
) -> None:
    job = post_spec(alice, tiny(256, name="alice-private")).json()
    first, second = tab_factory(), tab_factory()
    first.login(keys["alice"])
    expect(first.page.locator(f'tr[data-id="{job["id"]}"]')).to_contain_text("alice-private")
    second.login(keys["bob"])
    assert "alice-private" not in second.page.content()
    response = second.go(f"/experiments/{job['id']}")
    assert response.status == 404
    expect(second.page.get_by_role("alert")).to_contain_text("no experiment")
    events = second.page.request.get(f"{second.base_url}/v1/experiments/{job['id']}/events")
    assert events.status == 404
    spec = second.page.request.get(
        f"{second.base_url}/v1/experiments/{job['id']}/artifacts/resolved_spec.yaml"
    )
    assert spec.status == 404
    assert first.errors == []


def test_a_pasted_spec_with_k_31_is_refused_beside_its_line(tab_factory, keys) -> None:
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go("/submit")
    tab.page.get_by_label("Spec (YAML)").fill(K31)
    note = tab.page.locator('#notes li[data-line="6"]')
    expect(note).to_contain_text("K = 31 epochs is above the limit of 30")
    expect(tab.page.locator("#gutter li.bad")).to_have_text(["6"])
    expect(tab.page.locator("#issues")).to_contain_text("line 6: update.epochs")
    expect(tab.page.get_by_role("button", name="Submit experiment")).to_be_disabled()
    tab.page.get_by_label("Spec (YAML)").fill(K31.replace("epochs: 31", "epochs: 30"))
    expect(tab.page.get_by_role("status")).to_contain_text("Valid run spec")
    expect(tab.page.get_by_role("button", name="Submit experiment")).to_be_enabled()
    assert tab.errors == []


def test_the_plan_page_plans_and_hands_the_spec_to_the_submit_page(tab_factory, keys) -> None:
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go("/plan")
    tab.page.get_by_label("Env id").fill("CartPole-v1")
    tab.page.get_by_label("Budget (env steps)").fill("50000")
    tab.page.get_by_role("button", name="Plan").click()
    expect(tab.page.locator("#plan-spec")).to_contain_text("CartPole-v1")
    expect(tab.page.locator("#plan-markdown h2").first).to_be_visible()
    tab.page.get_by_role("button", name="Submit this spec").click()
    expect(tab.page.get_by_role("status")).to_contain_text(re.compile("Valid run spec"))
    assert tab.errors == []


def test_an_unknown_env_is_explained_on_the_plan_page(tab_factory, keys) -> None:
    tab = tab_factory()
    tab.login(keys["alice"])
    tab.go("/plan")
    tab.page.get_by_label("Env id").fill("NoSuchEnv-v9")
    tab.page.get_by_label("Budget (env steps)").fill("1000")
    tab.page.get_by_role("button", name="Plan").click()
    expect(tab.page.get_by_role("alert")).to_contain_text("NoSuchEnv-v9")


UNNAMED = """() => [
  ...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label')
                  && !(el.textContent || '').trim())
  .map((el) => el.outerHTML)"""


def test_pages_fit_a_narrow_window_and_every_control_has_a_name(tab_factory, keys) -> None:
    tab = tab_factory(width=390, height=800)
    tab.login(keys["alice"])
    for path in ("/", "/submit", "/plan"):
        tab.go(path)
        width = tab.page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide at 390"
        assert tab.page.evaluate(UNNAMED) == [], path
    assert tab.errors == []
