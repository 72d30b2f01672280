"""A policy whose user group resolves to nobody is visible: on the message, in the refusal
and once in the log, instead of an interrupt nobody can approve waiting silently."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from bot.agents.policy import Policy
from bot.ui import ids

ONCALL = "S0ONCALL"
NOBODY = (
    f"Nobody can approve this yet: group {ONCALL} has no members Signoff can see; "
    "check the app's usergroups:read scope"
)


def _context(post: dict[str, Any]) -> list[str]:
    blocks = [b for b in post["blocks"] if b["type"] == "context"]
    return [e["text"] for b in blocks for e in b["elements"]]


async def test_a_group_slack_will_not_list_says_nobody_can_approve(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="bot.services.directory")
    missing_scope = Fault(status=200, body={"ok": False, "error": "missing_scope"})
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,)))
    bot.slack.faults["usergroups.users.list"].append(missing_scope)
    value = await bot.start()
    assert NOBODY in _context(bot.posted())

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert bot.slack.called("chat.postEphemeral")[0]["text"] == NOBODY
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"

    bot.clock.advance(timedelta(hours=7))  # past the directory's cache: Slack is asked again
    bot.slack.faults["usergroups.users.list"].append(missing_scope)
    await bot.start("clean up again")
    assert NOBODY in _context(bot.posted())
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and ONCALL in errors[0] and "missing_scope" in errors[0]


async def test_a_group_with_members_shows_no_warning(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,)))
    bot.slack.groups[ONCALL] = [ALICE]
    value = await bot.start()
    assert not any("Nobody can approve" in t for t in _context(bot.posted()))
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()


async def test_a_quorum_the_requester_leaves_out_of_reach_says_so(make_bot: Any) -> None:
    """Alice asks and may not approve her own request: Bob alone can never make 2 of 2, and
    the card says so instead of offering an approval nobody can complete."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    await bot.start(requested_by=ALICE)
    assert (
        "This cannot be approved: it needs 2 approvals from people other than the "
        "requester, and only 1 may approve" in _context(bot.posted())
    )
    await bot.start(requested_by=CAROL)  # asked by someone else, both may approve
    assert not any("cannot be approved" in t for t in _context(bot.posted()))
