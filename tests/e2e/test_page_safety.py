"""Untrusted text in messages and modals never becomes HTML in the page, checked in Chromium.

Agent output reaches approvers through mrkdwn, plain_text and modals; whatever it holds,
the page must show it as text: no element, no event handler, no `javascript:` link. The
page is also served with a Content-Security-Policy that blocks inline script, as a
second line of defence, and must keep working under it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Dialog, Page, expect
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox

IMG = "<img src=x onerror=alert(1)>"
LINK = "<javascript:alert(1)|click>"
SCRIPT = "&lt;script&gt;alert(1)&lt;/script&gt;"
PAYLOADS = (IMG, LINK, SCRIPT)
POLICY = (
    "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
PAGE_SCRIPTS = ["/static/mrkdwn.js", "/static/blocks.js", "/static/views.js", "/static/app.js"]
# What the page holds that text could have turned into markup.
DOM_REPORT = """() => ({
  images: document.querySelectorAll("img, iframe, object, embed").length,
  scripts: [...document.scripts].map((s) => s.getAttribute("src")),
  jsLinks: [...document.querySelectorAll("[href], [src], [action]")].filter((n) =>
    /^\\s*javascript:/i.test(n.getAttribute("href") || n.getAttribute("src")
      || n.getAttribute("action") || "")).length,
  handlers: [...document.querySelectorAll("*")].filter((n) =>
    [...n.attributes].some((a) => a.name.toLowerCase().startsWith("on"))).length,
})"""


def _escaped(text: str) -> str:
    """How an app puts untrusted text into mrkdwn (SLACK.md): `&`, `<`, `>` only."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text}


def _hostile_modal() -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": "hostile",
        "title": _plain("Untrusted"),
        "submit": _plain("Send"),
        "blocks": [
            {"type": "section", "text": _mrkdwn("\n".join(PAYLOADS))},
            {"type": "section", "text": _plain(" ".join(PAYLOADS))},
            {
                "type": "input",
                "block_id": "text",
                "label": _plain(IMG),
                "hint": _plain(LINK),
                "element": {
                    "type": "plain_text_input",
                    "action_id": "v",
                    "initial_value": SCRIPT,
                    "placeholder": _plain(IMG),
                },
            },
            {
                "type": "input",
                "block_id": "pick",
                "label": _plain(SCRIPT),
                "element": {
                    "type": "static_select",
                    "action_id": "v",
                    "options": [
                        {"text": _plain(p), "value": str(i)} for i, p in enumerate(PAYLOADS)
                    ],
                },
            },
        ],
    }


async def _open(tab: Page, sb: Sandbox) -> list[str]:
    """Open the page as Alice in #ops; returns the JavaScript dialogs it ever shows."""
    dialogs: list[str] = []

    async def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        await dialog.dismiss()

    tab.on("dialog", dismiss)
    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0OPS")
    await expect(tab.locator("#acting-as")).to_have_value("U0ALICE")
    return dialogs


async def test_untrusted_text_shows_as_text_in_messages_and_modals(
    sb: Sandbox, bolt: AsyncApp, tab: Page, shots: Path
) -> None:
    @bolt.action("open_form")
    async def open_form(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=_hostile_modal())

    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    raw = "\n".join(PAYLOADS)
    await client.chat_postMessage(channel="C0OPS", text=raw)  # the fallback text, as mrkdwn
    mrkdwn_blocks = [
        {"type": "section", "text": _mrkdwn(raw), "fields": [_mrkdwn(p) for p in PAYLOADS]},
        {"type": "section", "text": _mrkdwn("\n".join(_escaped(p) for p in PAYLOADS))},
        {"type": "context", "elements": [_mrkdwn(p) for p in PAYLOADS]},
    ]
    await client.chat_postMessage(channel="C0OPS", text="mrkdwn", blocks=mrkdwn_blocks)
    plain_blocks = [
        {"type": "header", "text": _plain(IMG)},
        {"type": "section", "text": _plain(raw), "fields": [_plain(p) for p in PAYLOADS]},
        {"type": "context", "elements": [_plain(p) for p in PAYLOADS]},
        {
            "type": "actions",
            "elements": [
                {"type": "button", "action_id": "open_form", "text": _plain(LINK)},
                {"type": "button", "action_id": "other", "text": _plain(SCRIPT), "url": LINK},
            ],
        },
    ]
    await client.chat_postMessage(channel="C0OPS", text="plain", blocks=plain_blocks)

    dialogs = await _open(tab, sb)
    messages = tab.locator("#messages article.message")
    await expect(messages).to_have_count(3)
    fallback, mrkdwn, plain = messages.nth(0), messages.nth(1), messages.nth(2)
    # Raw mrkdwn: `<...>` is a control sequence, shown as its text; never a link or a tag.
    for shown in ("img src=x onerror=alert(1)", "click", "<script>alert(1)</script>"):
        await expect(fallback).to_contain_text(shown)
        await expect(mrkdwn.locator(".bk-fields")).to_contain_text(shown)
        await expect(mrkdwn.locator(".bk-context")).to_contain_text(shown)
    await expect(fallback).not_to_contain_text("alert(1)|click")
    # Escaped mrkdwn, as an app sends untrusted text: exactly what was written.
    escaped = mrkdwn.locator(".bk-section").nth(1)
    for payload in PAYLOADS:
        await expect(escaped).to_contain_text(payload)
        await expect(plain).to_contain_text(payload)
    await expect(plain.locator(".bk-header")).to_have_text(IMG)
    await expect(plain.get_by_role("button", name=SCRIPT, exact=True)).to_be_visible()

    await plain.get_by_role("button", name=LINK, exact=True).click()
    modal = tab.get_by_role("dialog")
    await expect(modal.get_by_role("heading", name="Untrusted")).to_be_visible()
    await expect(modal.locator(".bk-section").nth(0)).to_contain_text("<script>alert(1)</script>")
    await expect(modal.locator(".bk-section").nth(1)).to_have_text(" ".join(PAYLOADS))
    await expect(modal.get_by_label(IMG, exact=True)).to_have_value(SCRIPT)
    await expect(modal.get_by_label(IMG, exact=True)).to_have_attribute("placeholder", IMG)
    await expect(modal.locator(".hint")).to_have_text(LINK)
    select = modal.get_by_label(SCRIPT, exact=True)
    await expect(select.locator("option")).to_have_text(["Select…", *PAYLOADS])
    await tab.screenshot(path=shots / "untrusted-text.png")

    report = await tab.evaluate(DOM_REPORT)
    assert report == {"images": 0, "scripts": PAGE_SCRIPTS, "jsLinks": 0, "handlers": 0}
    assert dialogs == []


async def test_the_page_works_under_its_content_security_policy(sb: Sandbox, tab: Page) -> None:
    violations: list[str] = []
    tab.on("console", lambda m: violations.append(m.text) if "Security Policy" in m.text else None)
    await tab.add_init_script(
        "window.violations = [];"
        "document.addEventListener('securitypolicyviolation',"
        " (e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    response = await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0OPS")
    assert response is not None
    assert response.headers["content-security-policy"] == POLICY

    # The page's own scripts ran, and its stylesheet applies.
    await expect(tab.locator("#acting-as")).to_have_value("U0ALICE")
    await expect(tab.locator("#team-name")).to_have_text("Signoff Sandbox")
    await expect(tab.locator("#sidebar")).to_have_css("background-color", "rgb(63, 14, 64)")
    await tab.get_by_label("Message or slash command").fill("hello *there*")
    await tab.get_by_label("Message or slash command").press("Enter")
    await expect(tab.locator("#messages article.message b", has_text="there")).to_be_visible()
    assert await tab.evaluate("window.violations") == [] and violations == []

    # And it is enforced: script written into the page does not run.
    ran = await tab.evaluate(
        """() => {
          const s = document.createElement("script");
          s.textContent = "window.injected = true";
          document.body.append(s);
          return window.injected === true;
        }"""
    )
    assert ran is False
    await tab.wait_for_function("window.violations.length === 1")
