"""Real headless Chromium (Debian's `chromium`, driven by Playwright) against the real server.

Every page a test opens records console errors and uncaught exceptions; a test ends by
asserting there were none.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = os.environ.get("PPO_PLATFORM_CHROMIUM") or shutil.which("chromium") or ""


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM:
        message = "no chromium: run .ci/browser.sh (apt-get install chromium)"
        if os.environ.get("PPO_PLATFORM_REQUIRE_BROWSER"):
            pytest.fail(message)  # CI installs it: missing there is a failure, never a skip
        pytest.skip(message)
    from playwright import sync_api

    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


class Tab:
    """A page in its own browser context (own cookies) that remembers console errors."""

    def __init__(self, context: Any, base_url: str) -> None:
        self.context, self.base_url = context, base_url
        self.page = context.new_page()
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def go(self, path: str) -> Any:
        return self.page.goto(self.base_url + path)

    def login(self, key: str) -> None:
        self.go("/login")
        self.page.get_by_label("API key").fill(key)
        self.page.get_by_role("button", name="Log in").click()
        self.page.wait_for_url(self.base_url + "/")


@pytest.fixture
def tab_factory(browser: Any, server: Any) -> Iterator[Any]:
    contexts: list[Any] = []

    def make(width: int = 1280, height: int = 900) -> Tab:
        context = browser.new_context(
            viewport={"width": width, "height": height}, accept_downloads=True
        )
        contexts.append(context)
        return Tab(context, server.url)

    yield make
    for context in contexts:
        context.close()
