"""Over Socket Mode a user gets what HTTP mode gives them: a command's reply, a form's
errors in the form, a click queued before its ack, an event Slack sends again acted on
once, Home drawn. Each envelope goes over a real local WebSocket to slack-sdk's client."""

from __future__ import annotations

import asyncio
from typing import Any

from fakes import Fault, click_payload, home_click_payload, submit_payload
from harness import ALICE, CAROL, CHANNEL
from socket_bot import SocketBot

from bot.slack.socket_mode import watch_connection
from bot.ui import ids


def _mention(text: str, *, ts: str) -> dict[str, Any]:
    return {"type": "app_mention", "user": CAROL, "text": text, "ts": ts, "channel": CHANNEL}


async def test_the_commands_reply_rides_on_its_ack(socket_bot: Any) -> None:
    sb: SocketBot = await socket_bot()
    assert "/signoff run <agent> <input>" in (await sb.command("help", user=ALICE))["text"]
    assert (await sb.command("run cleanup tidy", user=CAROL))["text"] == "Starting cleanup…"
    await sb.bot.slack.wait_calls("chat.postMessage")
    listed = await sb.command("", user=ALICE)
    assert listed["text"] == "1 waiting for you" and listed["blocks"]


async def test_a_form_the_bot_refuses_says_why_in_the_form(socket_bot: Any) -> None:
    sb: SocketBot = await socket_bot()
    value = await sb.bot.start()
    empty = submit_payload(callback_id=ids.REPLY_VIEW, metadata=value, user=ALICE, text=" ")
    assert await sb.interact(empty) == {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: "Write the reply the agent should receive."},
    }
    deny = submit_payload(callback_id=ids.DENY_VIEW, metadata=value, user=ALICE, text="no")
    assert await sb.interact(deny) == {}
    assert await sb.bot.finished() == f"Finished: done: no\ncc <@{CAROL}>"
    assert await sb.interact(deny) == {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: f"Already denied by @{ALICE}; your click changed nothing."},
    }


async def test_a_click_is_on_the_click_stream_when_slack_gets_its_ack(socket_bot: Any) -> None:
    sb: SocketBot = await socket_bot(workers=0, deciders=0)
    value = await sb.bot.start()
    await sb.click(ids.APPROVE, value, user=ALICE)
    assert await sb.bot.services.storage.clicks.lag() == 1


async def test_the_same_click_delivered_twice_is_decided_once_without_a_note(
    socket_bot: Any,
) -> None:
    sb: SocketBot = await socket_bot()
    value = await sb.bot.start()
    ts = sb.bot.message_ts()
    payload = click_payload(  # the same payload, trigger id and all, twice
        action_id=ids.APPROVE, value=value, user=ALICE, channel=CHANNEL, message_ts=ts
    )
    assert await sb.interact(payload) == {}
    assert await sb.interact(payload) == {}
    assert "deleted 2 file(s)" in await sb.bot.finished()
    await sb.bot.settled()
    assert sb.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert sb.bot.slack.called("chat.postEphemeral") == []


async def test_a_mention_slack_retries_starts_one_run(socket_bot: Any) -> None:
    sb: SocketBot = await socket_bot()
    mention = _mention("<@UBOT0001> run cleanup tidy", ts="1700000000.000300")
    await sb.event(mention, event_id="Ev0SOCKET")
    await sb.event(mention, event_id="Ev0SOCKET", retry=1)
    await sb.event(mention, event_id="Ev0SOCKET", retry=2)
    await sb.bot.services.background.idle()
    [post] = sb.bot.slack.called("chat.postMessage")
    assert post["thread_ts"] == mention["ts"]


async def test_events_slack_sends_again_after_a_reconnection_are_acted_on_once(
    socket_bot: Any,
) -> None:
    """Slack sends again, on the new connection, the events it saw no ack for: one the
    app acted on starts nothing more, and one it never saw is acted on."""
    sb: SocketBot = await socket_bot()
    watchdog = asyncio.create_task(watch_connection(sb.handler, every=0.05))
    try:
        seen = _mention("<@UBOT0001> run cleanup a", ts="1700000000.000400")
        await sb.event(seen, event_id="Ev0SEEN")
        await sb.bot.slack.sockets[0].close()
        await sb.bot.slack.wait_for(lambda: len(sb.bot.slack.sockets) == 2, what="reconnecting")
        unseen = _mention("<@UBOT0001> run cleanup b", ts="1700000000.000500")
        await sb.event(seen, event_id="Ev0SEEN", retry=1)
        await sb.event(unseen, event_id="Ev0UNSEEN", retry=1)
        await sb.bot.services.background.idle()
    finally:
        watchdog.cancel()
    posts = sb.bot.slack.called("chat.postMessage")
    assert sorted(p["thread_ts"] for p in posts) == [seen["ts"], unseen["ts"]]


async def test_opening_app_home_draws_it(socket_bot: Any) -> None:
    sb: SocketBot = await socket_bot()
    await sb.bot.start()
    opened = {"type": "app_home_opened", "user": ALICE, "channel": "D0HOME", "tab": "home"}
    await sb.event(opened, event_id="Ev0HOME")
    await sb.bot.slack.wait_calls("views.publish")
    [home] = sb.bot.slack.called("views.publish")
    assert home["user_id"] == ALICE and "Waiting for you: 1" in str(home["view"])


async def test_homes_buttons_are_acked_at_once_while_slack_makes_home_wait(
    socket_bot: Any,
) -> None:
    """Next page and Revoke redraw Home after their ack: Slack asking Home's redraw to
    wait (``Retry-After``) must not make the click wait past Slack's 3 s."""
    sb: SocketBot = await socket_bot()
    slow = Fault(
        status=429, headers={"Retry-After": "3"}, body={"ok": False, "error": "ratelimited"}
    )
    sb.bot.slack.faults["views.publish"].extend([slow, slow])
    next_page = home_click_payload(user=ALICE, action_id=ids.NEXT_PAGE, value="")
    revoke = home_click_payload(user=ALICE, action_id=ids.REVOKE_TRUST, value="grant_none")
    async with asyncio.timeout(2):
        assert await asyncio.gather(sb.interact(next_page), sb.interact(revoke)) == [{}, {}]
    await sb.bot.slack.wait_calls("views.publish", 2, within=10)
    assert "This trust had already ended" in str(sb.bot.slack.called("views.publish"))
