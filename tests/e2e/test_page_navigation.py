"""The page as a newcomer uses it: switching "Acting as" answers at once every time (on the
Home tab too, which opens for the new person), and a permalink, or a link button to one,
opens its channel at its message."""

from __future__ import annotations

from collections import Counter
from typing import Any

from playwright.async_api import Page
from playwright.async_api import expect as async_expect
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

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


async def test_a_permalink_opens_its_channel_at_its_message(sb: Sandbox, tab: Page) -> None:
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    first = await client.chat_postMessage(channel="C0OPS", text="the card to find")
    for n in range(40):  # enough to push the first message out of view
        await client.chat_postMessage(channel="C0OPS", text=f"later message {n}")
    link = (await client.chat_getPermalink(channel="C0OPS", message_ts=first["ts"]))["permalink"]

    await tab.goto(link)
    linked = tab.locator("#messages article.message.linked")
    await async_expect(linked).to_contain_text("the card to find")
    await async_expect(linked).to_be_in_viewport()


async def test_a_link_button_to_a_permalink_opens_its_message_as_the_same_person(
    sb: Sandbox, bolt: AsyncApp, tab: Page
) -> None:
    """A button with a ``url`` (the "Open" beside a request in ``/signoff`` and Home) opens
    its link as Slack does, and its click still reaches the app; a permalink of this
    workspace opens in the page, still acting as the same person."""
    clicked: list[str] = []

    @bolt.action("open")
    async def opened(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        clicked.append(body["user"]["id"])

    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    card = await client.chat_postMessage(channel="C0OPS", text="the card to open")
    for n in range(40):  # enough to push the card out of view
        await client.chat_postMessage(channel="C0OPS", text=f"later message {n}")
    link = (await client.chat_getPermalink(channel="C0OPS", message_ts=card["ts"]))["permalink"]
    button = {"type": "button", "action_id": "open", "text": _plain("Open"), "url": link}
    blocks = [{"type": "actions", "elements": [button]}]
    await client.chat_postMessage(channel="C0GENERAL", text="a listing", blocks=blocks)

    await tab.goto(f"{sb.base_url}/#user=U0BOB&channel=C0GENERAL")
    await tab.get_by_role("button", name="Open", exact=True).click()
    linked = tab.locator("#messages article.message.linked")
    await async_expect(linked).to_contain_text("the card to open")
    await async_expect(linked).to_be_in_viewport()
    await async_expect(tab.locator("#acting-as")).to_have_value("U0BOB")
    assert await sb.wait_for(lambda: clicked) == ["U0BOB"]

    # Any other web address opens in a new tab, leaving the workspace where it was.
    runbook = "https://example.com/runbook"
    await tab.context.route(runbook, lambda route: route.fulfill(body="the runbook"))
    button = {"type": "button", "action_id": "open", "text": _plain("Runbook"), "url": runbook}
    await client.chat_postMessage(
        channel="C0OPS", text="a link", blocks=[{"type": "actions", "elements": [button]}]
    )
    async with tab.context.expect_page() as opening:
        await tab.get_by_role("button", name="Runbook", exact=True).click()
    page = await opening.value
    await async_expect(page.locator("body")).to_have_text("the runbook")
    await async_expect(tab.locator("#channel-title")).to_have_text("# ops")


async def test_a_group_dm_is_listed_for_its_people_and_opens(sb: Sandbox, tab: Page) -> None:
    client = AsyncWebClient(base_url=sb.api_url, token=sb.bot_token)
    opened = await client.conversations_open(users="U0ALICE,U0BOB")
    await client.chat_postMessage(channel=opened["channel"]["id"], text="for the two of you")

    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0GENERAL")
    group = tab.locator("#dm-list a")
    await async_expect(group).to_have_text(["Alice Moreau, Bob Okafor"])
    await group.click()
    await async_expect(tab.locator("#channel-title")).to_have_text("Alice Moreau, Bob Okafor")
    await async_expect(tab.locator("#messages")).to_contain_text("for the two of you")

    await tab.locator("#acting-as").select_option("U0CAROL")  # not one of its people
    await async_expect(tab.locator("#acting-tz")).to_contain_text("Asia/Tokyo")
    await async_expect(group).to_have_count(0)


async def test_switching_acting_as_on_the_home_tab_opens_that_persons_home(
    sb: Sandbox, bolt: AsyncApp, tab: Page
) -> None:
    """Each person who opens the Home tab is one `app_home_opened`, as in Slack: switching
    "Acting as" there shows the new person's Home, not "not published" or a stale one."""

    opened: Counter[str] = Counter()

    @bolt.event("app_home_opened")
    async def home(event: dict[str, Any], client: AsyncWebClient) -> None:
        opened[event["user"]] += 1
        text = f"Home of {event['user']}, opened {opened[event['user']]} times"
        view = {"type": "home", "blocks": [{"type": "section", "text": _plain(text)}]}
        await client.views_publish(user_id=event["user"], view=view)

    await tab.goto(f"{sb.base_url}/#user=U0ALICE&channel=C0GENERAL")
    await tab.locator("#open-home").click()
    await async_expect(tab.locator("#home")).to_have_text("Home of U0ALICE, opened 1 times")

    await tab.locator("#acting-as").select_option("U0BOB")
    await async_expect(tab.locator("#home")).to_have_text("Home of U0BOB, opened 1 times")
    await tab.locator("#acting-as").select_option("U0ALICE")
    await async_expect(tab.locator("#home")).to_have_text("Home of U0ALICE, opened 2 times")


def _plain(text: str) -> dict[str, str]:
    return {"type": "plain_text", "text": text}
