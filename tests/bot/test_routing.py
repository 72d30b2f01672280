"""Where interrupts go: escalation on expiry, and direct messages to the approvers."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Escalate, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

ESCALATION = "C0ESCALATE"


async def test_expiry_with_escalate_asks_the_escalation_users_who_can_then_decide(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=ESCALATION, users=(BOB,)),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    refused = await bot.click(ids.APPROVE, value, user=BOB)
    assert refused.status == 200
    await bot.slack.wait_calls("chat.postEphemeral")  # Bob may not decide yet

    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()
    escalation = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == ESCALATION]
    assert len(escalation) == 1
    assert escalation[0]["text"].startswith("Escalated") and f"<@{BOB}>" in escalation[0]["text"]
    assert escalation[0].get("thread_ts") is None
    # A real card: the same buttons, and the original card says where it went.
    assert escalation[0]["blocks"][-1]["elements"][0]["value"] == value
    [original] = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    assert f"Escalated to <#{ESCALATION}>" in str(original["blocks"])
    assert bot.tool_log.calls == []
    listed = await bot.command("", user=BOB)
    assert listed["text"] == "1 waiting for you"

    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == BOB


async def test_an_escalation_open_to_its_channel_is_decided_from_its_own_card_and_both_update(
    make_bot: Any,
) -> None:
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=ESCALATION, anyone_in_channel=True),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()
    [card] = [p for p in bot.slack.called("chat.postMessage") if p["channel"] == ESCALATION]
    assert f"anyone in <#{ESCALATION}>" in str(card["blocks"])
    escalation_ts = next(
        str(a["ts"]) for a in bot.slack.answers("chat.postMessage") if a["channel"] == ESCALATION
    )

    # Anyone in the escalation channel, from its card; not from the original card.
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert bot.tool_log.calls == []

    await bot.click(ids.APPROVE, value, user=MALLORY, channel=ESCALATION, message_ts=escalation_ts)
    await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    # The cards are redrawn by the click decider, independently of the resumed run.
    approved = f"Approved by <@{MALLORY}>"
    await bot.slack.wait_for(
        lambda: sum(approved in str(u["blocks"]) for u in bot.slack.called("chat.update")) >= 2,
        what="both cards redrawn",
    )
    updates = {(u["channel"], u["ts"]): u for u in bot.slack.called("chat.update")}
    for where in ((CHANNEL, bot.message_ts()), (ESCALATION, escalation_ts)):
        assert f"Approved by <@{MALLORY}>" in str(updates[where]["blocks"])


async def test_a_dm_policy_posts_the_interrupt_in_a_conversation_opened_with_the_approver(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(dm=True, users=(ALICE,)))
    value = await bot.start(requested_by=CAROL)
    [opened] = bot.slack.called("conversations.open")
    assert opened["users"] == ALICE
    dm = bot.slack.answers("conversations.open")[0]["channel"]["id"]
    post = bot.posted()
    assert post["channel"] == dm and dm.startswith("D")

    await bot.click(ids.APPROVE, value, user=ALICE, channel=dm)
    await bot.slack.wait_for(
        lambda: any(
            p["channel"] == dm and str(p.get("text", "")).startswith("Finished")
            for p in bot.slack.called("chat.postMessage")
        ),
        what="the result in the direct message's thread",
    )
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    # The card is redrawn by the click decider, independently of the resumed run.
    await bot.slack.wait_calls("chat.update")
    update = bot.slack.called("chat.update")[-1]
    assert update["channel"] == dm and update["ts"] == bot.message_ts()


async def test_a_dm_policy_with_two_approvers_posts_in_their_group_dm_where_both_decide(
    make_bot: Any,
) -> None:
    policy = Policy(dm=True, users=(ALICE, BOB), min_approvals=2)
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    [opened] = bot.slack.called("conversations.open")
    assert opened["users"] == f"{ALICE},{BOB}"
    group_dm = bot.slack.answers("conversations.open")[0]["channel"]["id"]
    assert group_dm.startswith("G") and bot.posted()["channel"] == group_dm

    await bot.click(ids.APPROVE, value, user=ALICE, channel=group_dm)
    await bot.slack.wait_calls("chat.update")
    progress = bot.slack.called("chat.update")[-1]
    assert progress["channel"] == group_dm
    assert any("1 of 2 approvals" in str(b) for b in progress["blocks"])
    assert bot.tool_log.calls == []

    await bot.click(ids.APPROVE, value, user=BOB, channel=group_dm)
    await bot.slack.wait_for(
        lambda: any(
            p["channel"] == group_dm and str(p.get("text", "")).startswith("Finished")
            for p in bot.slack.called("chat.postMessage")
        ),
        what="the result in the group DM's thread",
    )
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved"
    assert {v.user_id for v in record.votes} == {ALICE, BOB}


async def test_a_modal_decides_as_a_click_on_the_message_it_was_opened_from(
    make_bot: Any,
) -> None:
    """Mallory may not decide on the first card; an Edit form she opened there before the
    escalation must not decide once the escalation is open to its channel's members."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=ESCALATION, anyone_in_channel=True),
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.DENY, value, user=MALLORY)
    await bot.slack.wait_calls("views.open")
    opened_early = bot.slack.called("views.open")[-1]["view"]["private_metadata"]
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()

    status, body = await bot.submit(ids.DENY_VIEW, opened_early, user=MALLORY, text="no")
    assert status == 200 and "not among the approvers" in body, body
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"

    escalation_ts = next(
        str(a["ts"]) for a in bot.slack.answers("chat.postMessage") if a["channel"] == ESCALATION
    )
    await bot.click(ids.DENY, value, user=MALLORY, channel=ESCALATION, message_ts=escalation_ts)
    await bot.slack.wait_for(
        lambda: len(bot.slack.called("views.open")) == 2, what="the form from the escalation"
    )
    from_escalation = bot.slack.called("views.open")[-1]["view"]["private_metadata"]
    status, body = await bot.submit(ids.DENY_VIEW, from_escalation, user=MALLORY, text="no")
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert bot.tool_log.calls == []
