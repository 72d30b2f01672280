"""Quorum decisions over signed HTTP (issue 4, test 6): progress until enough approve, one
vote per approver, any deny ends it, no Edit or Reply, and every approver named."""

from __future__ import annotations

import asyncio
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Policy
from bot.ui import ids


async def test_quorum_of_two_shows_progress_then_resumes_on_the_second_approval(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    progress = bot.slack.called("chat.update")[-1]
    assert any("1 of 2 approvals" in str(b) for b in progress["blocks"])
    assert "actions" in [b["type"] for b in progress["blocks"]]
    assert bot.tool_log.calls == []

    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert len(bot.tool_log.calls) == 1
    final = bot.slack.called("chat.update")[-1]
    assert any(f"<@{ALICE}>, <@{BOB}>" in str(b) for b in final["blocks"])


async def test_a_quorum_denied_after_an_approval_still_shows_that_approval(
    make_bot: Any,
) -> None:
    """Alice approved, then Bob denied: the decided card says both, not only the denial."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.DENY, value, user=BOB)
    await bot.slack.wait_calls("views.open")
    status, _ = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not today")
    assert status == 200
    await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    assert bot.tool_log.calls == []
    await bot.services.background.idle()  # the card is redrawn after the form's ack
    final = bot.slack.called("chat.update")[-1]
    [status_line] = [b for b in final["blocks"] if b["type"] == "context"]
    said = [e["text"] for e in status_line["elements"]]
    assert said[0].startswith(f":no_entry: Denied by <@{BOB}>"), said
    assert f"1 of 2 approvals before it ended: <@{ALICE}>" in said, said


async def test_a_double_click_on_a_quorum_card_reaching_two_processes_is_one_vote(
    make_bot: Any,
) -> None:
    """Alice's two clicks on a card that wants two approvals reach two bot processes at
    once: one vote is counted, the other click is refused, and nothing runs until Bob's."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy, deciders=2)
    other: Harness = await make_bot(policy, deciders=2)
    value = await bot.start(requested_by=CAROL)
    ts = bot.message_ts()
    acks = await asyncio.gather(
        bot.click(ids.APPROVE, value, user=ALICE, message_ts=ts),
        other.click(ids.APPROVE, value, user=ALICE, message_ts=ts),
    )
    assert [a.status for a in acks] == [200, 200]
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == ALICE
    assert refusal["text"] == "Your approval is already counted (1 of 2); waiting for others."
    await bot.slack.wait_calls("chat.update")
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.approvals == (ALICE,)
    assert bot.tool_log.calls == [] and other.tool_log.calls == []

    await bot.click(ids.APPROVE, value, user=BOB, message_ts=ts)
    await bot.finished()
    assert len(bot.tool_log.calls) + len(other.tool_log.calls) == 1


async def test_a_quorum_card_offers_no_edit_or_reply_and_refuses_a_forged_one(
    make_bot: Any,
) -> None:
    """One person's edit or reply would end a quorum alone: the card does not offer them,
    and a submission of the Edit form anyway is refused, changing nothing."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    actions = [b for b in bot.posted()["blocks"] if b["type"] == "actions"]
    offered = [e.get("action_id") for b in actions for e in b["elements"]]
    assert ids.APPROVE in offered and ids.DENY in offered
    assert ids.EDIT not in offered and ids.REPLY not in offered
    status, _ = await bot.submit(ids.EDIT_VIEW, value, user=ALICE, text='{"paths": ["/"]}')
    assert status == 200
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert bot.tool_log.calls == []


async def test_one_deny_ends_a_quorum_request_as_its_card_says_up_front(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    assert "0 of 2 approvals; any deny ends it" in str(bot.posted()["blocks"])

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    status, _ = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not today")
    assert status == 200
    await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    await bot.services.background.idle()  # the card is redrawn after the form's ack
    final = bot.slack.called("chat.update")[-1]
    assert final["blocks"][0]["text"]["text"].startswith("Denied")
    assert bot.tool_log.calls == []


async def test_a_late_click_on_an_approved_quorum_names_every_approver(make_bot: Any) -> None:
    """Alice and Bob made the 2 of 3: Mallory's late click is told both approved it, as the
    card says, not only the one whose click completed it."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB, MALLORY), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.finished()
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    told = bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert told == f"Already approved by <@{ALICE}>, <@{BOB}>; your click changed nothing.", told
