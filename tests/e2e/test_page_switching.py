"""The page as a newcomer uses it: switching "Acting as" answers at once every time, and a
restarted demo keeps its address while the open tab reconnects by itself."""

from __future__ import annotations

from pathlib import Path

from demo_process import DemoProcess
from playwright.async_api import Page
from playwright.async_api import expect as async_expect
from playwright.sync_api import Browser, expect

from sandbox import Sandbox

SWITCH_MS = 3_000
"""Far below the page's 25 s long poll: a switch that waited for a stale poll fails."""

PEOPLE = {"U0ALICE": "Europe/Paris", "U0BOB": "America/New_York", "U0CAROL": "Asia/Tokyo"}


async def test_switching_acting_as_again_and_again_never_stalls(sb: Sandbox, tab: Page) -> None:
    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0GENERAL")
    picker = tab.locator("#acting-as")
    zone = tab.locator("#acting-tz")
    await async_expect(zone).to_contain_text("Europe/Paris")
    # More switches than Chromium's six connections per host: each must show at once.
    for user in ["U0BOB", "U0CAROL", "U0ALICE"] * 4:
        await picker.select_option(user)
        await async_expect(zone).to_contain_text(PEOPLE[user], timeout=SWITCH_MS)
        await async_expect(tab.locator("#messages")).to_be_visible(timeout=SWITCH_MS)


def test_a_restarted_demo_keeps_its_address_and_the_tab_reconnects(
    browser: Browser, tmp_path: Path
) -> None:
    data_dir = tmp_path / "demo"
    first = DemoProcess.start(data_dir)
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{first.url}#user=U0ALICE&channel=C0GENERAL")
        expect(page.locator("#acting-tz")).to_contain_text("Europe/Paris")
        code, _, stderr = first.stop()
        assert code == 0, stderr
        banner = page.locator("#reconnecting")
        expect(banner).to_be_visible()
        expect(page.locator("#notices .notice")).to_have_count(1)  # one banner, not a pile

        second = DemoProcess.start(data_dir)
        try:
            assert second.url == first.url
            expect(banner).to_have_count(0)
            composer = page.get_by_label("Message or slash command")
            composer.fill("still here")
            composer.press("Enter")
            expect(page.locator("#messages")).to_contain_text("still here")
        finally:
            code, _, stderr = second.stop()
            assert code == 0, stderr
    finally:
        context.close()
