"""Redis fails under a bot answering over Socket Mode: every answer still reaches Slack
within its 3 seconds and says what happened, and nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import os
import signal
from typing import Any

import pytest
from fakes import submit_payload
from harness import ALICE
from socket_bot import SocketBot

from bot.ui import ids
from bot.ui.refusals import FORM_UNCONFIRMED, LIST_DOWN, STORAGE_DOWN, UNCONFIRMED
from storage import EmbeddedRedis, Storage


@pytest.fixture
def storage(own_storage: Storage) -> Storage:
    """The bot's storage is on this module's own Redis, which its tests stop, or freeze,
    and start again."""
    return own_storage


async def test_while_redis_is_down_each_answer_says_so_and_nothing_changes(
    socket_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    sb: SocketBot = await socket_bot()
    value = await sb.bot.start()
    server.stop()
    await sb.click(ids.APPROVE, value, user=ALICE)
    await sb.bot.slack.wait_calls("chat.postEphemeral")
    assert [n["text"] for n in sb.bot.slack.called("chat.postEphemeral")] == [STORAGE_DOWN]
    deny = submit_payload(callback_id=ids.DENY_VIEW, metadata=value, user=ALICE, text="no")
    assert await sb.interact(deny) == {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: STORAGE_DOWN},
    }
    assert (await sb.command("", user=ALICE))["text"] == LIST_DOWN
    server.start()
    record = await storage.queries.get(sb.bot.record_id(value))
    assert record is not None and record.state == "pending"


async def test_while_redis_stalls_each_answer_leaves_in_time_and_what_it_took_lands(
    socket_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    """Slack shows its own error to an answer later than 3 s; a stalled Redis (5 s before
    a command times out) must not make the click, the form or the list that late. The
    click and the form that Redis took once it answers again are shown on their cards."""
    sb: SocketBot = await socket_bot()
    clicked = await sb.bot.start("clean a")
    denied = await sb.bot.start("clean b")
    deny = submit_payload(callback_id=ids.DENY_VIEW, metadata=denied, user=ALICE, text="no")
    assert server.pid is not None
    os.kill(server.pid, signal.SIGSTOP)
    try:
        async with asyncio.timeout(3):  # all three at once, as three users would
            _, form, listed = await asyncio.gather(
                sb.click(ids.APPROVE, clicked, user=ALICE, index=0),
                sb.interact(deny),
                sb.command("", user=ALICE),
            )
    finally:
        os.kill(server.pid, signal.SIGCONT)
    assert form == {"response_action": "errors", "errors": {ids.INPUT_BLOCK: FORM_UNCONFIRMED}}
    assert listed["text"] == LIST_DOWN
    cards = {sb.bot.message_ts(0): "approved", sb.bot.message_ts(1): "denied"}
    await sb.bot.slack.wait_for(
        lambda: {u["ts"] for u in sb.bot.slack.called("chat.update")} == set(cards),
        within=15,
        what="both cards redrawn",
    )
    for value, state in ((clicked, "approved"), (denied, "denied")):
        record = await storage.queries.get(sb.bot.record_id(value))
        assert record is not None and (record.state, record.decided_by) == (state, ALICE)
    assert [n["text"] for n in sb.bot.slack.called("chat.postEphemeral")] == [UNCONFIRMED]
