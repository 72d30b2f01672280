"""conversations.history and .replies read back what was posted, newest first (a thread
oldest first), paged, with an app's message metadata only when asked for it."""

from __future__ import annotations

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

CARD = {"event_type": "signoff_card", "event_payload": {"record_id": "run_1/int_1"}}


async def test_history_is_newest_first_and_shows_metadata_only_when_asked(
    client: AsyncWebClient,
) -> None:
    first = await client.chat_postMessage(channel="C0OPS", text="card", metadata=CARD)
    await client.chat_postMessage(channel="C0OPS", text="reply", thread_ts=first["ts"])
    await client.chat_postMessage(channel="C0OPS", text="later")
    plain = await client.conversations_history(channel="C0OPS")
    assert [m["text"] for m in plain["messages"]] == ["later", "card"]
    assert all("metadata" not in m for m in plain["messages"])
    shown = await client.conversations_history(channel="C0OPS", include_all_metadata=True)
    assert shown["messages"][1]["metadata"] == CARD
    after = await client.conversations_history(channel="C0OPS", oldest=first["ts"])
    assert [m["text"] for m in after["messages"]] == ["later"]


async def test_history_pages_by_cursor(client: AsyncWebClient) -> None:
    for n in range(3):
        await client.chat_postMessage(channel="C0OPS", text=f"n{n}")
    page = await client.conversations_history(channel="C0OPS", limit=2)
    assert [m["text"] for m in page["messages"]] == ["n2", "n1"] and page["has_more"]
    cursor = page["response_metadata"]["next_cursor"]
    rest = await client.conversations_history(channel="C0OPS", limit=2, cursor=cursor)
    assert [m["text"] for m in rest["messages"]] == ["n0"] and not rest["has_more"]


async def test_replies_show_a_thread_with_its_metadata(client: AsyncWebClient) -> None:
    parent = await client.chat_postMessage(channel="C0OPS", text="run")
    await client.chat_postMessage(
        channel="C0OPS", text="card", thread_ts=parent["ts"], metadata=CARD
    )
    thread = await client.conversations_replies(
        channel="C0OPS", ts=parent["ts"], include_all_metadata=True
    )
    assert [m["text"] for m in thread["messages"]] == ["run", "card"]
    assert thread["messages"][1]["metadata"] == CARD


async def test_history_of_a_channel_without_the_bot_is_not_in_channel(
    client: AsyncWebClient,
) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.conversations_history(channel="C0RANDOM")
    assert caught.value.response["error"] == "not_in_channel"
