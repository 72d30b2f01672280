"""End-to-end fixtures: the demo as users run it, and Debian's Chromium driven by Playwright.

The browser is always ``/usr/bin/chromium`` (``./run test`` installs it when missing),
never one Playwright downloads; without it the tests fail, they are never skipped.
Screenshots of each step, and of every page when a test fails, go to ``artifacts/e2e/``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from demo_process import ROOT, DemoProcess
from playwright.sync_api import Browser, expect, sync_playwright
from workspace_page import SlackPage

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "artifacts" / "e2e"
WAIT_MS = 15_000
FAILED = pytest.StashKey[bool]()

expect.set_options(timeout=WAIT_MS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module: Playwright's sync API keeps an event loop running
    while it is open, which must be gone before any asyncio test runs."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
            "(./run test installs it; or: sudo apt-get install chromium)",
            pytrace=False,
        )
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoProcess]:
    """A fresh demo (its own data directory, free ports) for one test."""
    running = DemoProcess.start(tmp_path / "demo")
    yield running
    code, _, stderr = running.stop()
    assert code == 0, stderr


@pytest.fixture
def open_as(
    browser: Browser, demo: DemoProcess, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], SlackPage]]:
    """Open the workspace in a new browser window as a user (``U0ALICE``) in #general."""
    shots = ARTIFACTS / request.node.name
    shots.mkdir(parents=True, exist_ok=True)
    pages: list[SlackPage] = []

    def open_as(user: str) -> SlackPage:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(WAIT_MS)
        page = SlackPage(page=context.new_page(), user=user, shots=shots)
        page.open(demo.url, channel="C0GENERAL")
        pages.append(page)
        return page

    yield open_as
    for page in pages:
        if request.node.stash.get(FAILED, False):
            page.screenshot("failed")
        page.page.context.close()
