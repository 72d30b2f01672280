"""Clicks and submissions in the shapes Slack documents for them (its reference examples,
trimmed), over signed HTTP: an Enterprise Grid workspace, an attachment's container, a
card in a thread, a Slack Connect member from another team, a modal's empty input.
Each is decided as its clicker, or refused to them, never to anyone else."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fakes import form_body, sign, trigger_id
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.slack.events import EVENTS_PATH
from bot.ui import ids


def _documented_click(*, user: str, value: str, message_ts: str) -> dict[str, Any]:
    """Slack's reference ``block_actions`` example, trimmed, clicking ``value``'s Approve."""
    return {
        "type": "block_actions",
        "team": {"id": "T9TK3CUKW", "domain": "example"},
        "user": {"id": user, "username": user.lower(), "team_id": "T9TK3CUKW"},
        "api_app_id": "AABA1ABCD",
        "token": "9s8d9as89d8as9d8as989",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": CHANNEL,
            "is_ephemeral": False,
        },
        "trigger_id": trigger_id(),
        "channel": {"id": CHANNEL, "name": "review-updates"},
        "message": {"type": "message", "ts": message_ts, "text": "", "blocks": []},
        "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/AABA1ABCD/1232321423432/D09sSasdasd",
        "actions": [
            {
                "action_id": ids.APPROVE,
                "block_id": ids.ACTIONS_BLOCK,
                "text": {"type": "plain_text", "text": "Approve", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def _grid(payload: dict[str, Any]) -> None:
    """An Enterprise Grid workspace: the org named, the clicker's home team another one."""
    payload["team"] |= {"enterprise_id": "E0GRID", "enterprise_name": "Example Org"}
    payload["enterprise"] = {"id": "E0GRID", "name": "Example Org"}
    payload["is_enterprise_install"] = False
    payload["user"]["team_id"] = "T0OTHERWS"


def _attachment(payload: dict[str, Any]) -> None:
    """The container Slack's example shows: a message attachment's."""
    payload["container"] |= {"type": "message_attachment", "attachment_id": 1}
    payload["container"]["is_app_unfurl"] = False


def _thread(payload: dict[str, Any]) -> None:
    """A card read in its thread: the container names the thread, no ``channel`` object."""
    payload["container"]["thread_ts"] = "1700000000.000001"
    del payload["channel"]


@pytest.mark.parametrize("shape", [_grid, _attachment, _thread], ids=lambda f: f.__name__)
async def test_a_click_in_a_documented_shape_is_decided_as_its_clicker(
    make_bot: Any, shape: Any
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    payload = _documented_click(user=BOB, value=value, message_ts=bot.message_ts())
    shape(payload)
    response = await bot.send(payload)
    assert response.status == 200
    assert "deleted 2 file(s)" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == BOB


async def test_a_slack_connect_member_of_another_team_not_asked_is_refused(
    make_bot: Any,
) -> None:
    """Someone from a partner organisation sees the card in a shared channel; a click by
    them is checked as anyone's, and refused to them alone."""
    bot: Harness = await make_bot()
    value = await bot.start()
    payload = _documented_click(user="U0PARTNER", value=value, message_ts=bot.message_ts())
    payload["user"]["team_id"] = "T0PARTNER"
    payload["is_ext_shared_channel"] = True
    assert (await bot.send(payload)).status == 200
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == "U0PARTNER" and refusal["channel"] == CHANNEL
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and bot.tool_log.calls == []


async def test_a_deny_submitted_with_its_reason_left_empty_is_a_denial_without_one(
    make_bot: Any,
) -> None:
    """Slack sends an optional input left empty as ``"value": null``."""
    bot: Harness = await make_bot()
    value = await bot.start()
    payload = {
        "type": "view_submission",
        "team": {"id": "T9TK3CUKW", "domain": "example", "enterprise_id": "E0GRID"},
        "enterprise": {"id": "E0GRID", "name": "Example Org"},
        "is_enterprise_install": False,
        "user": {"id": ALICE, "username": "alice", "name": "alice", "team_id": "T0OTHERWS"},
        "api_app_id": "AABA1ABCD",
        "trigger_id": trigger_id(),
        "view": {
            "id": "VNHU13V36",
            "type": "modal",
            "team_id": "T9TK3CUKW",
            "callback_id": ids.DENY_VIEW,
            "private_metadata": value,
            "hash": "156663117.cd33ad1f",
            "state": {
                "values": {
                    ids.INPUT_BLOCK: {ids.INPUT_ACTION: {"type": "plain_text_input", "value": None}}
                }
            },
            "app_installed_team_id": "T9TK3CUKW",
        },
        "response_urls": [],
    }
    body = form_body(payload)
    async with bot.http.post(bot.url + EVENTS_PATH, data=body.encode(), headers=sign(body)) as r:
        assert r.status == 200 and "errors" not in await r.text()
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "denied" and record.decided_by == ALICE
    assert bot.tool_log.calls == []


THREAD = "1700000000.000001"
"""The message whose thread a run was started in (a mention of the bot, say)."""


@pytest.mark.parametrize("action", [ids.APPROVE, ids.MORE])
async def test_a_refusal_of_a_click_on_a_card_in_a_thread_is_shown_in_that_thread(
    make_bot: Any, action: str
) -> None:
    """Slack names the thread of a message clicked in one (``container.thread_ts``); the
    clicker reads the thread (opened from the card's notification, or on a phone), so the
    note only they see goes there, not to the channel below. Approve is decided from the
    click stream, Withdraw (not the requester's) is refused at once: both say it there."""
    bot: Harness = await make_bot()
    place = Place(channel=CHANNEL, thread_ts=THREAD, requested_by=CAROL)
    await start_run(bot.services, bot.agent, "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage")
    card = bot.posted()
    assert card["thread_ts"] == THREAD
    value = card["blocks"][-1]["elements"][0]["value"]
    payload = _documented_click(user=MALLORY, value=value, message_ts=bot.message_ts())
    if action == ids.MORE:  # the overflow menu: Slack sends the option picked
        record_id = value.split(" ")[0]
        payload["actions"][0] = {
            "type": "overflow",
            "action_id": ids.MORE,
            "block_id": ids.ACTIONS_BLOCK,
            "selected_option": {"value": f"{ids.WITHDRAW} {record_id}"},
            "action_ts": f"{time.time():.6f}",
        }
    payload["container"]["thread_ts"] = THREAD
    assert (await bot.send(payload)).status == 200
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert (refusal["user"], refusal["channel"]) == (MALLORY, CHANNEL)
    assert refusal["thread_ts"] == THREAD


async def test_a_refusal_of_a_click_on_a_card_heading_its_thread_stays_in_the_channel(
    make_bot: Any,
) -> None:
    """A card with replies is itself a thread's parent (Slack may name it as the thread):
    it is read in the channel, so the note is shown there."""
    bot: Harness = await make_bot()
    value = await bot.start()
    payload = _documented_click(user=MALLORY, value=value, message_ts=bot.message_ts())
    payload["container"]["thread_ts"] = bot.message_ts()
    assert (await bot.send(payload)).status == 200
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == MALLORY and "thread_ts" not in refusal


@pytest.mark.parametrize("thread", [THREAD, None], ids=["in a thread", "in the channel"])
@pytest.mark.parametrize(
    ("text", "says"),
    [("what can you do?", "To start a run"), ("run cleanup tidy", "You may not start")],
)
async def test_a_note_on_a_mention_is_shown_where_it_was_written(
    make_bot: Any, thread: str | None, text: str, says: str
) -> None:
    """Slack's ``app_mention`` names the thread of a mention written in one: the hint, or
    the refusal of someone who may not start the agent, goes there. A mention in the
    channel has no thread yet: its note stays in the channel (in a thread nobody opened,
    Slack would not show it)."""
    bot: Harness = await make_bot(started_by=("S0STARTERS",))
    bot.slack.groups["S0STARTERS"] = [ALICE]
    mention = {
        "type": "app_mention",
        "user": CAROL,
        "text": f"<@UBOT0001> {text}",
        "ts": "1700000000.000700",
        "channel": CHANNEL,
        "event_ts": "1700000000.000700",
        **({"thread_ts": thread} if thread else {}),
    }
    await bot.event(mention)
    await bot.slack.wait_calls("chat.postEphemeral")
    [note] = bot.slack.called("chat.postEphemeral")
    assert note["user"] == CAROL and note["text"].startswith(says)
    assert note.get("thread_ts") == thread and bot.slack.called("chat.postMessage") == []
