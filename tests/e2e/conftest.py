"""End-to-end fixtures: the demo as users run it, and Debian's Chromium driven by Playwright.

The browser is always ``/usr/bin/chromium`` (``./run test`` installs it when missing),
never one Playwright downloads; without it the tests fail, they are never skipped.
Screenshots of each step, and of every page when a test fails, go to ``artifacts/e2e/``.

The demo tests drive the sync API against a demo subprocess. The page tests
(``test_page_*``) need the sandbox and a Bolt app in the test's own event loop, so
they drive the same Chromium through the async API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web
from demo_process import ROOT, DemoProcess
from playwright.async_api import Page, async_playwright
from playwright.async_api import expect as async_expect
from playwright.sync_api import Browser, expect, sync_playwright
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient
from workspace_page import SlackPage

from sandbox import Sandbox, Timing

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
async_expect.set_options(timeout=WAIT_MS)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> pytest.TestReport:
    report: pytest.TestReport = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


def _require_chromium() -> None:
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: the browser tests need Debian's chromium "
            "(./run test installs it; or: sudo apt-get install chromium)",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Chromium for one test module: Playwright's sync API keeps an event loop running
    while it is open, which must be gone before any asyncio test runs."""
    _require_chromium()
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
def shots(request: pytest.FixtureRequest) -> Path:
    """This test's screenshot folder under ``artifacts/e2e/``."""
    folder = ARTIFACTS / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def open_as(
    browser: Browser, demo: DemoProcess, shots: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], SlackPage]]:
    """Open the workspace in a new browser window as a user (``U0ALICE``) in #general."""
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


@pytest.fixture
async def sb() -> AsyncIterator[Sandbox]:
    """A sandbox in the test's event loop; a click nobody acks times out after 3 s, as in
    Slack, which a busy host's in-process app, sharing the loop with the browser, still meets."""
    async with Sandbox(timing=Timing(ack_timeout=3.0)) as sandbox:
        yield sandbox


@pytest.fixture
async def bolt(sb: Sandbox) -> AsyncIterator[AsyncApp]:
    """A Bolt app served over HTTP that the sandbox delivers to; tests add its listeners."""
    app = AsyncApp(
        client=AsyncWebClient(base_url=sb.api_url, token=sb.bot_token),
        signing_secret=sb.signing_secret,
    )
    runner = web.AppRunner(app.web_app(path="/slack/events"))
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    sb.request_url = f"http://{host}:{port}/slack/events"
    yield app
    await runner.cleanup()


@pytest.fixture
async def tab(sb: Sandbox, shots: Path, request: pytest.FixtureRequest) -> AsyncIterator[Page]:
    """A Chromium tab (async API) for the sandbox's page; not opened yet."""
    _require_chromium()
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        context = await chromium.new_context(viewport={"width": 1400, "height": 900})
        context.set_default_timeout(WAIT_MS)
        tab = await context.new_page()
        yield tab
        if request.node.stash.get(FAILED, False):
            await tab.screenshot(path=shots / "failed.png")
        await chromium.close()
