"""A restarted demo keeps its address, and the tab left open reconnects by itself."""

from __future__ import annotations

from pathlib import Path

from demo_process import DemoProcess
from playwright.sync_api import Browser, expect


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
