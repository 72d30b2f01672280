"""One person's browser tab on the sandbox workspace, and the gestures the tests make in it.

Selectors follow what a person sees (button names, headers, dialogs), so a test reads as
the steps someone would take in Slack. Every wait is Playwright's auto-waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from playwright.sync_api import Locator, Page, expect


@dataclass(kw_only=True)
class SlackPage:
    page: Page
    user: str
    shots: Path

    def open(self, url: str, *, channel: str) -> None:
        self.page.goto(f"{url}#user={self.user}&channel={channel}")
        expect(self.page.locator("#acting-as")).to_have_value(self.user)

    def go(self, label: str) -> None:
        """Open a channel or direct message from the sidebar, by the name it shows there."""
        self.page.locator("#sidebar nav a", has_text=label).click()
        expect(self.page.locator("#channel-title")).to_have_text(label)

    def send(self, text: str) -> None:
        """Type in the channel's composer and press Enter (slash commands included)."""
        composer = self.page.get_by_label("Message or slash command")
        composer.fill(text)
        composer.press("Enter")

    def message(self, header: str) -> Locator:
        """The latest channel message whose Block Kit header contains ``header``."""
        headed = self.page.locator(".bk-header", has_text=header)
        return self.page.locator("#messages article.message").filter(has=headed).last

    def button(self, message: Locator, name: str) -> Locator:
        return message.get_by_role("button", name=name, exact=True)

    def confirm(self) -> None:
        """Accept the confirm dialog of a dangerous button."""
        dialog = self.page.get_by_role("alertdialog")
        expect(dialog).to_be_visible()
        self.screenshot("confirm")
        dialog.locator("[data-role=confirm]").click()

    def modal(self, title: str) -> Locator:
        modal = self.page.get_by_role("dialog").filter(
            has=self.page.get_by_role("heading", name=title)
        )
        expect(modal).to_be_visible()
        return modal

    def open_thread(self, message: Locator) -> Locator:
        """Open the message's thread; returns the thread pane."""
        message.locator("button.replies").click()
        pane = self.page.locator("#thread-messages")
        expect(pane).to_be_visible()
        return pane

    def ephemeral(self, text: str) -> Locator:
        return self.page.locator("#messages article.message.ephemeral", has_text=text)

    def screenshot(self, step: str) -> None:
        self.page.screenshot(path=self.shots / f"{self.user}-{step}.png")
