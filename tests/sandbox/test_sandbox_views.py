"""The Web API's views: the Home tab, and modals opened, updated and pushed with live
triggers and hashes, as Slack checks them."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from sandbox_buttons import BUTTONS
from slack_bolt.async_app import AsyncAck, AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py


async def test_views_publish_sets_the_home_tab(client: AsyncWebClient, sb: Sandbox) -> None:
    view = {
        "type": "home",
        "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "Waiting"}}],
    }
    first = await client.views_publish(user_id="U0ALICE", view=view)
    second = await client.views_publish(user_id="U0ALICE", view=view)
    assert first["view"]["id"] == second["view"]["id"]
    home = sb.workspace.home("U0ALICE")
    assert home is not None and home.spec["blocks"][0]["type"] == "header"


async def test_views_open_needs_a_live_trigger(client: AsyncWebClient) -> None:
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "Why?"}, "blocks": []}
    with pytest.raises(SlackApiError) as caught:
        await client.views_open(trigger_id="1.2.nope", view=modal)
    assert caught.value.response["error"] == "invalid_trigger_id"


FORM = {
    "type": "modal",
    "external_id": "form-1",
    "title": {"type": "plain_text", "text": "Edit"},
    "blocks": [
        {
            "type": "section",
            "text": {"type": "mrkdwn", "text": "Step 1"},
            "accessory": {
                "type": "button",
                "action_id": "more",
                "text": {"type": "plain_text", "text": "More"},
            },
        }
    ],
}


def _titled(title: str) -> dict[str, Any]:
    return {"type": "modal", "title": {"type": "plain_text", "text": title}, "blocks": []}


@pytest.fixture
async def trigger(
    sb: Sandbox, app: AsyncApp, serve: Serve, client: AsyncWebClient
) -> Callable[..., Awaitable[str]]:
    """Click as Alice (a message button, or `More` in view `view_id`); returns its trigger id."""
    triggers: list[str] = []

    @app.action(re.compile(".*"))
    async def remember(ack: AsyncAck, body: dict[str, Any]) -> None:
        triggers.append(body["trigger_id"])
        await ack()

    await serve(app)
    ts = (await client.chat_postMessage(channel="C0OPS", text="x", blocks=BUTTONS))["ts"]

    async def click(*, view_id: str | None = None) -> str:
        if view_id:
            ack = await sb.interactions.click_in_view("U0ALICE", view_id=view_id, action_id="more")
        else:
            ack = await sb.interactions.click(
                "U0ALICE", channel="C0OPS", message_ts=ts, action_id="approve"
            )
        assert ack.status == "acked"
        return triggers[-1]

    return click


async def _error(call: Awaitable[Any]) -> str:
    with pytest.raises(SlackApiError) as caught:
        await call
    return str(caught.value.response["error"])


async def test_views_update_replaces_a_modal_unless_its_hash_is_stale(
    client: AsyncWebClient, sb: Sandbox, trigger: Callable[..., Awaitable[str]]
) -> None:
    opened = (await client.views_open(trigger_id=await trigger(), view=FORM))["view"]
    updated = (
        await client.views_update(view_id=opened["id"], hash=opened["hash"], view=_titled("Two"))
    )["view"]
    assert updated["id"] == opened["id"] and updated["hash"] != opened["hash"]
    assert updated["title"]["text"] == "Two"

    stale = client.views_update(view_id=opened["id"], hash=opened["hash"], view=_titled("Old"))
    assert await _error(stale) == "hash_conflict"
    [shown] = sb.workspace.modals("U0ALICE")
    assert shown.spec["title"]["text"] == "Two" and shown.hash == updated["hash"]

    again = await client.views_update(view_id=opened["id"], view=_titled("No hash, no check"))
    assert again["view"]["title"]["text"] == "No hash, no check"
    assert await _error(client.views_update(view_id="V0NOPE", view=FORM)) == "not_found"


async def test_views_update_finds_a_modal_by_external_id(
    client: AsyncWebClient, sb: Sandbox, trigger: Callable[..., Awaitable[str]]
) -> None:
    opened = (await client.views_open(trigger_id=await trigger(), view=FORM))["view"]
    updated = await client.views_update(external_id="form-1", view=_titled("By external id"))
    assert updated["view"]["id"] == opened["id"]
    assert sb.workspace.modals("U0ALICE")[0].spec["title"]["text"] == "By external id"
    missing = client.views_update(external_id="form-2", view=FORM)
    assert await _error(missing) == "not_found"


async def test_views_push_stacks_a_modal_on_the_open_one(
    client: AsyncWebClient, sb: Sandbox, trigger: Callable[..., Awaitable[str]]
) -> None:
    nothing_open = client.views_push(trigger_id=await trigger(), view=_titled("Alone"))
    assert await _error(nothing_open) == "not_found"

    opened = (await client.views_open(trigger_id=await trigger(), view=FORM))["view"]
    inside = await trigger(view_id=opened["id"])  # a click in the modal, as Slack requires
    pushed = (await client.views_push(trigger_id=inside, view=_titled("Step 2")))["view"]
    assert pushed["previous_view_id"] == opened["id"]
    assert pushed["root_view_id"] == opened["id"] and pushed["id"] != opened["id"]
    assert [v.id for v in sb.workspace.modals("U0ALICE")] == [opened["id"], pushed["id"]]
    reused = client.views_push(trigger_id=inside, view=_titled("Step 3"))
    assert await _error(reused) == "expired_trigger_id"


async def test_views_publish_refuses_a_stale_hash(client: AsyncWebClient, sb: Sandbox) -> None:
    home = {"type": "home", "blocks": [{"type": "divider"}]}
    first = (await client.views_publish(user_id="U0BOB", view=home))["view"]
    second = (await client.views_publish(user_id="U0BOB", view=home, hash=first["hash"]))["view"]
    assert second["id"] == first["id"] and second["hash"] != first["hash"]
    stale = client.views_publish(user_id="U0BOB", view=home, hash=first["hash"])
    assert await _error(stale) == "hash_conflict"
    update = client.views_update(view_id=first["id"], hash=first["hash"], view=home)
    assert await _error(update) == "hash_conflict"
    current = sb.workspace.home("U0BOB")
    assert current is not None and current.hash == second["hash"]
