"""A card clicked in a process whose build of the card's agent fails (it restarted without
the agent's API key, say): Edit, its form's submission and a withdrawal each tell the
person it could not be done and why, the card claims nothing, and nothing stored changes."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids

NOT_LOADED = (
    "Signoff could not load this request's agent (agent 'cleanup': build() raised "
    "ValueError; see the bot's log), so "
)


def _no_api_key(store: SessionStore) -> Any:
    raise ValueError("no API key")


async def _pending_run(make_bot: Any) -> tuple[Harness, Harness, str]:
    """Carol's cleanup run waiting on its card, started by a process that builds the
    agent; a second process, whose build of it fails; the card's button value."""
    good: Harness = await make_bot()
    value = await good.start(requested_by=CAROL)
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB))
    broken: Harness = await make_bot(
        spec=AgentSpec(name="cleanup", build=_no_api_key, policy=policy)
    )
    return good, broken, value


async def _unchanged(bot: Harness, value: str) -> None:
    """The request is still pending, undecided, with its arguments; its card untouched."""
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.decision is None
    call = record.runtime_interrupt.tool_call
    assert call is not None and call.args == {"paths": ["/tmp/a", "/tmp/b"]}
    assert bot.slack.called("chat.update") == []


def _logged_cause(caplog: pytest.LogCaptureFixture) -> bool:
    """The bot's log has the build's own error, as the person was told."""
    errors = [logging.Formatter().formatException(r.exc_info) for r in caplog.records if r.exc_info]
    return any("ValueError: no API key" in e for e in errors)


async def test_edit_says_the_form_was_not_opened_and_why(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _, broken, value = await _pending_run(make_bot)
    await broken.click(ids.EDIT, value, user=ALICE)
    await broken.slack.wait_calls("chat.postEphemeral")
    [note] = broken.slack.called("chat.postEphemeral")
    assert note["user"] == ALICE
    assert note["text"] == NOT_LOADED + "the edit form was not opened; nothing was decided."
    assert broken.slack.called("views.open") == []
    await _unchanged(broken, value)
    assert _logged_cause(caplog)


@pytest.mark.parametrize("form", ["fields", "JSON"])
async def test_an_edit_submitted_is_refused_in_the_modal_and_nothing_is_decided(
    make_bot: Any, caplog: pytest.LogCaptureFixture, form: str
) -> None:
    """The form was opened before the process restarted; its submission reaches the
    process that cannot build the agent to check the edit against its tool."""
    good, broken, value = await _pending_run(make_bot)
    if form == "fields":
        await good.click(ids.EDIT, value, user=ALICE)
        await good.slack.wait_calls("views.open")
        view = good.slack.called("views.open")[-1]["view"]
        [block] = [b["block_id"] for b in view["blocks"] if b["type"] == "input"]
        values = {block: {"type": "plain_text_input", "value": "/tmp/a"}}
        status, body = await broken.submit_form(value, user=ALICE, values=values)
    else:
        block = ids.INPUT_BLOCK
        status, body = await broken.submit(
            ids.EDIT_VIEW, value, user=ALICE, text='{"paths": ["/tmp/a"]}'
        )
    assert status == 200, body
    said = NOT_LOADED + "this edit could not be checked; nothing was decided."
    assert json.loads(body) == {"response_action": "errors", "errors": {block: said}}
    await _unchanged(broken, value)
    assert _logged_cause(caplog)


async def test_a_withdrawal_is_not_made_and_the_requester_is_told_why(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Withdrawn in storage with the agent's run left waiting for ever is worse than not
    withdrawn: nothing is cancelled, and once the agent loads the withdrawal works."""
    good, broken, value = await _pending_run(make_bot)
    record_id = broken.record_id(value)
    await broken.click(ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {record_id}")
    await broken.slack.wait_calls("chat.postEphemeral")
    [note] = broken.slack.called("chat.postEphemeral")
    assert note["user"] == CAROL
    assert note["text"] == NOT_LOADED + "the request was not withdrawn and is still pending."
    await _unchanged(broken, value)
    assert _logged_cause(caplog)
    assert not any(t.startswith("Withdrawn") for t in broken.thread())

    await good.click(ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {record_id}")
    await good.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in good.thread()),
        what="the withdrawal in the thread",
    )
    record = await good.services.storage.queries.get(record_id)
    assert record is not None and record.state == "cancelled"
    status = await good.services.registry.agent("cleanup").thread_status(record.thread_id)
    assert status is not None and status.last_result is not None
    assert status.last_result.stop_reason == "cancelled"
