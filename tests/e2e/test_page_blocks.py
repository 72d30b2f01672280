"""Every Block Kit element the sandbox's page claims to render, seen in Chromium.

One message carries each message block and element, a button opens a modal with each
input, the App Home tab is published, and a lost click shows "Operation timed out".
Each is checked by what a person sees (text, role); screenshots go to artifacts/e2e/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}


def _mrkdwn(text: str) -> dict[str, str]:
    return {"type": "mrkdwn", "text": text}


def _button(text: str, action_id: str, **extra: Any) -> dict[str, Any]:
    return {"type": "button", "text": _plain(text), "action_id": action_id, **extra}


def _options(*labels: str) -> list[dict[str, Any]]:
    return [{"text": _plain(label), "value": label.lower()} for label in labels]


CONFIRM = {
    "title": _plain("Deploy to prod?"),
    "text": _plain("Version 42 goes live for everyone."),
    "confirm": _plain("Deploy"),
    "deny": _plain("Not yet"),
}
MESSAGE = [
    {"type": "header", "text": _plain("Deploy request")},
    {
        "type": "section",
        "text": _mrkdwn("*Bold ask* from <@U0BOB>"),
        "accessory": _button("Details", "details"),
    },
    {
        "type": "section",
        "text": _plain("Plain words, *not bold*"),
        "fields": [_mrkdwn("*Env*\nprod"), _plain("Version 42")],
    },
    {"type": "context", "elements": [_mrkdwn("Requested by <@U0ALICE>"), _plain("2 min ago")]},
    {"type": "divider"},
    {
        "type": "rich_text",
        "elements": [
            {
                "type": "rich_text_preformatted",
                "elements": [{"type": "text", "text": "kubectl rollout restart deploy/api"}],
            }
        ],
    },
    {
        "type": "image",
        "image_url": "https://example.com/latency.png",
        "alt_text": "Latency graph",
        "title": _plain("Latency"),
    },
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            _button("Approve", "approve", style="primary", confirm=CONFIRM),
            _button("Deny", "deny", style="danger"),
            _button("Open form", "form"),
        ],
    },
]
FORM = {
    "type": "modal",
    "callback_id": "form",
    "title": _plain("Deploy form"),
    "submit": _plain("Submit"),
    "close": _plain("Cancel"),
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": _plain("Reason"),
            "element": {"type": "plain_text_input", "action_id": "v", "multiline": True},
        },
        {
            "type": "input",
            "block_id": "env",
            "label": _plain("Environment"),
            "element": {"type": "static_select", "action_id": "v", "options": _options("Prod")},
        },
        {
            "type": "input",
            "block_id": "urgency",
            "label": _plain("Urgency"),
            "element": {
                "type": "radio_buttons",
                "action_id": "v",
                "options": _options("Low", "High"),
            },
        },
        {
            "type": "input",
            "block_id": "replicas",
            "label": _plain("Replicas"),
            "element": {"type": "number_input", "action_id": "v", "is_decimal_allowed": False},
        },
        {
            "type": "input",
            "block_id": "owner",
            "label": _plain("Owner"),
            "element": {"type": "email_text_input", "action_id": "v"},
        },
        {
            "type": "input",
            "block_id": "day",
            "label": _plain("Day"),
            "element": {"type": "datepicker", "action_id": "v", "initial_date": "2026-12-01"},
        },
        {
            "type": "input",
            "block_id": "at",
            "label": _plain("At"),
            "element": {"type": "datetimepicker", "action_id": "v"},
        },
    ],
}
HOME = {
    "type": "home",
    "blocks": [
        {"type": "header", "text": _plain("Waiting for you")},
        {"type": "section", "text": _mrkdwn("*1* deploy request")},
    ],
}


def _deploy_app(bolt: AsyncApp, clicks: list[str]) -> None:
    @bolt.action("approve")
    async def approve(ack: AsyncAck) -> None:
        await ack()
        clicks.append("approve")

    @bolt.action("form")
    async def form(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        await ack()
        await client.views_open(trigger_id=body["trigger_id"], view=FORM)

    @bolt.view("form")
    async def submitted(ack: AsyncAck, view: dict[str, Any]) -> None:
        values = view["state"]["values"]
        if len(values["reason"]["v"]["value"]) < 10:
            await ack(response_action="errors", errors={"reason": "Say a little more."})
            return
        await ack()
        clicks.append(values["urgency"]["v"]["selected_option"]["value"])
        clicks.append(values["replicas"]["v"]["value"])
        clicks.append(values["owner"]["v"]["value"])
        clicks.append(values["day"]["v"]["selected_date"])
        clicks.append(str(values["at"]["v"]["selected_date_time"]))

    @bolt.event("app_home_opened")
    async def home(event: dict[str, Any], client: AsyncWebClient) -> None:
        await client.views_publish(user_id=event["user"], view=HOME)


async def test_every_block_the_page_renders(
    sb: Sandbox, bolt: AsyncApp, tab: Page, shots: Path
) -> None:
    clicks: list[str] = []
    _deploy_app(bolt, clicks)
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    await client.chat_postMessage(channel="C0OPS", text="Deploy request", blocks=MESSAGE)
    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0OPS")

    message = tab.locator("#messages article.message")
    await expect(message.get_by_role("heading", name="Deploy request")).to_be_visible()
    await expect(message.locator("b", has_text="Bold ask")).to_be_visible()
    await expect(message.locator(".mention", has_text="@bob")).to_be_visible()
    await expect(message.locator(".bk-accessory").get_by_role("button")).to_have_text("Details")
    await expect(message.locator(".plain")).to_contain_text(["Plain words, *not bold*"])
    fields = message.locator(".bk-fields > div")
    await expect(fields).to_have_text(["Env prod", "Version 42"], use_inner_text=True)
    await expect(message.locator(".bk-context")).to_have_text("Requested by @alice2 min ago")
    await expect(message.get_by_role("separator")).to_have_count(1)
    await expect(message.locator("pre")).to_have_text("kubectl rollout restart deploy/api")
    image = message.get_by_role("link", name="Latency graph")
    await expect(image).to_have_attribute("href", "https://example.com/latency.png")
    await expect(message.locator(".bk-image")).to_contain_text("Latency")
    approve = message.get_by_role("button", name="Approve", exact=True)
    await expect(approve).to_have_class("bk-button primary")
    deny = message.get_by_role("button", name="Deny", exact=True)
    await expect(deny).to_have_class("bk-button danger")
    await tab.screenshot(path=shots / "message.png")

    await approve.click()
    dialog = tab.get_by_role("alertdialog")
    await expect(dialog.get_by_role("heading", name="Deploy to prod?")).to_be_visible()
    await expect(dialog).to_contain_text("Version 42 goes live for everyone.")
    await expect(dialog.get_by_role("button", name="Not yet")).to_be_visible()
    await tab.screenshot(path=shots / "confirm.png")
    await dialog.get_by_role("button", name="Deploy").click()
    await expect(dialog).to_be_hidden()
    assert await sb.wait_for(lambda: clicks) == ["approve"]

    await message.get_by_role("button", name="Open form").click()
    modal = tab.get_by_role("dialog")
    await expect(modal.get_by_role("heading", name="Deploy form")).to_be_visible()
    reason = modal.get_by_role("textbox", name="Reason")
    await expect(reason).to_have_js_property("tagName", "TEXTAREA")
    await modal.get_by_role("combobox", name="Environment").select_option("prod")
    await modal.get_by_role("radio", name="High").check()
    await modal.get_by_role("spinbutton", name="Replicas").fill("3")
    await modal.get_by_role("textbox", name="Owner").fill("ops@example.com")
    await expect(modal.get_by_label("Day")).to_have_value("2026-12-01")
    await modal.get_by_label("At").fill("2026-12-24T09:30")
    await reason.fill("soon")
    await modal.get_by_role("button", name="Submit").click()
    await expect(modal.locator(".field-error")).to_have_text("Say a little more.")
    await tab.screenshot(path=shots / "modal-field-error.png")
    await reason.fill("the fix for the login outage")
    await modal.get_by_role("button", name="Submit").click()
    await expect(modal).to_be_hidden()
    expected = ["high", "3", "ops@example.com", "2026-12-01", "1798104600"]
    assert await sb.wait_for(lambda: clicks[1:]) == expected

    sb.faults.drop_deliveries(1)  # the next click is lost on its way to the app
    await deny.click()
    notice = tab.get_by_role("status")
    await expect(notice).to_contain_text("Operation timed out")
    await tab.screenshot(path=shots / "timed-out.png")

    await tab.get_by_role("link", name="signoff (Home)").click()
    home = tab.locator("#home")
    await expect(home.get_by_role("heading", name="Waiting for you")).to_be_visible()
    await expect(home).to_contain_text("1 deploy request")
    await tab.screenshot(path=shots / "home.png")


async def test_ticks_in_a_message_go_with_its_button_as_slack_sends_them(
    sb: Sandbox, bolt: AsyncApp, tab: Page
) -> None:
    """A batch card's checkboxes: what the clicker unticked reaches the app in the
    button's block_actions, under state.values."""
    states: list[dict[str, Any]] = []

    @bolt.action("go")
    async def go(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        states.append(body["state"]["values"])

    items = _options("vol-1", "vol-2", "vol-3")
    boxes = {"type": "checkboxes", "action_id": "pick", "options": items, "initial_options": items}
    blocks = [
        {"type": "actions", "block_id": "items", "elements": [boxes]},
        {"type": "actions", "block_id": "decide", "elements": [_button("Approve selected", "go")]},
    ]
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    await client.chat_postMessage(channel="C0OPS", text="3 items", blocks=blocks)
    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0OPS")

    message = tab.locator("#messages article.message")
    await expect(message.get_by_role("checkbox")).to_have_count(3)
    await message.get_by_role("checkbox", name="vol-2").uncheck()
    await message.get_by_role("button", name="Approve selected").click()
    [values] = await sb.wait_for(lambda: states)
    ticked = values["items"]["pick"]
    assert ticked["type"] == "checkboxes"
    assert [o["value"] for o in ticked["selected_options"]] == ["vol-1", "vol-3"]


async def test_an_overflow_menu_is_a_menu_that_holds_no_choice(
    sb: Sandbox, bolt: AsyncApp, tab: Page
) -> None:
    """As in Slack, an overflow menu is a "More actions" button: after a pick, or a pick
    whose confirm was cancelled, it shows no option chosen, so the same option can be
    picked again (a native select would take that pick as no change and send nothing)."""
    picked: list[str] = []

    @bolt.action("more")
    async def more(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        picked.append(body["actions"][0]["selected_option"]["value"])

    menu = {"type": "overflow", "action_id": "more", "options": _options("Withdraw")}
    blocks = [{"type": "actions", "elements": [{**menu, "confirm": CONFIRM}]}]
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    await client.chat_postMessage(channel="C0OPS", text="a request", blocks=blocks)
    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0OPS")

    overflow = tab.locator("#messages article.message").get_by_role("combobox")
    await expect(overflow).to_have_accessible_name("More actions")
    await overflow.select_option(label="Withdraw")
    await tab.get_by_role("alertdialog").get_by_role("button", name="Not yet").click()
    await expect(overflow).to_have_value("")

    await overflow.select_option(label="Withdraw")
    await tab.get_by_role("alertdialog").get_by_role("button", name="Deploy").click()
    assert await sb.wait_for(lambda: picked) == ["withdraw"]
    await expect(overflow).to_have_value("")
