"""User groups change while requests wait (a new on-call engineer): a newcomer who acts is
looked up again, at most once a minute per group, and the scheduler keeps every pending
request's members current, so someone who left may no longer decide."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import Fault
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from agent_runtime.interrupts import Remember
from bot.agents.policy import Escalate, Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage.ids import record_id
from storage.records import InterruptRecord

ONCALL = "S0ONCALL"


async def _bot_for_oncall(make_bot: Any, *members: str) -> tuple[Harness, str]:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,)))
    bot.slack.groups[ONCALL] = list(members)
    value = await bot.start()
    return bot, value


async def test_a_newcomer_to_the_group_approves_with_the_button(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    bot.slack.groups[ONCALL] = [BOB]  # the rotation changed after the request was posted
    bot.clock.advance(timedelta(minutes=2))

    await bot.click(ids.APPROVE, value, user=BOB)

    assert "deleted 2 file(s)" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decided_by == BOB
    assert record.policy.group_members == (BOB,)
    assert bot.slack.called("chat.postEphemeral") == []
    audit = await bot.services.storage.audit.read()
    assert [(e.event, e.user_id) for e in audit if e.event == "approvers_refreshed"] == [
        ("approvers_refreshed", BOB)
    ]


async def test_a_newcomer_denies_through_the_modal(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot)  # nobody at first
    bot.slack.groups[ONCALL] = [BOB]
    bot.clock.advance(timedelta(minutes=2))

    await bot.click(ids.DENY, value, user=BOB)
    await bot.slack.wait_calls("views.open")
    await bot.services.background.idle()  # the members are asked for once the modal is open
    status, body = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not today")

    assert status == 200 and "errors" not in body
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "denied" and record.decided_by == BOB
    assert bot.tool_log.calls == []


async def test_an_outsider_is_refused_and_slack_is_asked_at_most_once_a_minute(
    make_bot: Any,
) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    before = await bot.services.storage.queries.get(bot.record_id(value))
    bot.clock.advance(timedelta(minutes=2))

    for _ in range(3):
        await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral", 3)

    assert len(bot.slack.called("usergroups.users.list")) == 2  # posting, then once now
    assert await bot.services.storage.queries.get(bot.record_id(value)) == before
    assert bot.tool_log.calls == []


async def test_the_scheduler_keeps_group_members_current(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    bot.slack.groups[ONCALL] = [BOB]  # Alice handed over to Bob
    bot.clock.advance(timedelta(minutes=6))
    await Scheduler(bot.services).tick()

    queries = bot.services.storage.queries
    assert [r.id for r in (await queries.pending_for_user(BOB)).records] == [bot.record_id(value)]
    assert (await queries.pending_for_user(ALICE)).records == ()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[0]["text"]
    record = await queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"


async def test_a_group_that_gains_members_loses_its_warning(make_bot: Any) -> None:
    bot, _ = await _bot_for_oncall(make_bot)  # nobody at first
    assert "Nobody can approve" in str(bot.posted()["blocks"])
    bot.slack.groups[ONCALL] = [BOB]
    bot.clock.advance(timedelta(minutes=6))
    await Scheduler(bot.services).tick()

    [update] = bot.slack.called("chat.update")
    assert update["ts"] == bot.message_ts() and "Nobody can approve" not in str(update["blocks"])
    assert ids.APPROVE in str(update["blocks"])  # still waiting for a decision


async def test_members_are_kept_when_slack_does_not_list_the_group(make_bot: Any) -> None:
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    before = await bot.services.storage.queries.get(bot.record_id(value))
    bot.clock.advance(timedelta(minutes=6))
    refused = Fault(status=200, body={"ok": False, "error": "missing_scope"})
    bot.slack.faults["usergroups.users.list"].append(refused)
    await Scheduler(bot.services).tick()

    assert not bot.slack.faults["usergroups.users.list"]  # the check asked, and was refused
    assert await bot.services.storage.queries.get(bot.record_id(value)) == before
    assert bot.slack.called("chat.update") == []
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()


async def test_a_delegate_stands_in_only_while_the_person_is_in_the_group(make_bot: Any) -> None:
    """Dave is on call and away, Mallory standing in for him. While he is in the group
    she decides for him; once the scheduler sees he has left it, she may not."""
    dave = "U0DAVE"
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,), reminders=None))
    bot.slack.add_user(dave, tz="UTC")
    bot.slack.groups[ONCALL] = [dave]
    answer = await bot.command(f"away until 2026-12-24 to <@{MALLORY}>", user=dave)
    assert "away until" in answer["text"], answer
    first = await bot.start()
    await bot.click(ids.APPROVE, first, user=MALLORY)
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(first))
    assert record is not None and (record.state, record.decided_by) == ("approved", MALLORY)
    assert MALLORY not in record.policy.allowed_users  # she stands in for a member only
    value = await bot.start()
    bot.slack.groups[ONCALL] = [BOB]  # Dave is no longer on call
    for _ in range(3):
        bot.clock.advance(timedelta(minutes=10))
        await Scheduler(bot.services).tick()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.policy.group_members == (BOB,)
    assert MALLORY not in record.policy.deciders
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"


async def test_a_card_posted_after_someone_left_the_group_does_not_name_them(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,), reminders=None))
    bot.slack.groups[ONCALL] = [MALLORY, BOB]
    first = await bot.start()
    record = await bot.services.storage.queries.get(bot.record_id(first))
    assert record is not None and record.policy.group_members == (MALLORY, BOB)
    bot.slack.groups[ONCALL] = [BOB]  # Mallory leaves the rotation
    bot.clock.advance(timedelta(hours=1))
    later = await bot.start()
    record = await bot.services.storage.queries.get(bot.record_id(later))
    assert record is not None and record.policy.group_members == (BOB,)


async def test_a_new_card_asks_slack_for_the_group_once_its_list_is_five_minutes_old(
    make_bot: Any,
) -> None:
    """The README's "give or take minutes": a card posted within 5 minutes of the last
    look-up uses the list it has; one posted after asks Slack again."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, groups=(ONCALL,), reminders=None))
    bot.slack.groups[ONCALL] = [MALLORY, BOB]
    await bot.start()
    asked = len(bot.slack.called("usergroups.users.list"))
    bot.slack.groups[ONCALL] = [BOB]  # Mallory leaves the rotation
    bot.clock.advance(timedelta(minutes=4))
    soon = await bot.start()
    record = await bot.services.storage.queries.get(bot.record_id(soon))
    assert record is not None and record.policy.group_members == (MALLORY, BOB)
    assert len(bot.slack.called("usergroups.users.list")) == asked
    bot.clock.advance(timedelta(minutes=2))
    later = await bot.start()
    record = await bot.services.storage.queries.get(bot.record_id(later))
    assert record is not None and record.policy.group_members == (BOB,)


LEADS, STEP = "C0LEADS", timedelta(hours=2)
ESCALATES_TO_LEADS = Policy(
    channel=CHANNEL,
    users=(ALICE,),
    expires_after=STEP,
    reminders=None,
    on_expiry=Escalate(channel=LEADS, groups=("S0LEADS",), expires_after=STEP),
)
"""Alice decides, then, after two hours, anyone in the leads group on its card in #leads."""


def _card_in(bot: Harness, channel: str) -> str:
    """The ts of the card posted in ``channel``."""
    posts = zip(
        bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage"), strict=True
    )
    return next(str(answer["ts"]) for post, answer in posts if post["channel"] == channel)


async def test_an_escalation_steps_group_is_checked_like_the_policys(make_bot: Any) -> None:
    """Mallory is in the leads group when the request is posted and leaves it before the
    request escalates to that group: on the step's card she is refused, Bob decides."""
    bot: Harness = await make_bot(ESCALATES_TO_LEADS)
    bot.slack.groups["S0LEADS"] = [MALLORY]
    value = await bot.start()
    bot.slack.groups["S0LEADS"] = [BOB]  # Mallory leaves the rotation
    for _ in range(12):  # two hours of ticks: the request escalates
        bot.clock.advance(timedelta(minutes=10))
        await Scheduler(bot.services).tick()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.escalated
    ts = _card_in(bot, LEADS)
    await bot.click(ids.APPROVE, value, user=MALLORY, channel=LEADS, message_ts=ts)
    await bot.slack.wait_calls("chat.postEphemeral")
    await bot.click(ids.APPROVE, value, user=BOB, channel=LEADS, message_ts=ts)
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and (record.state, record.decided_by) == ("approved", BOB)
    assert record.policy.rungs[0].group_members == (BOB,)


async def test_a_newcomer_to_an_escalation_steps_group_approves_on_its_card(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(ESCALATES_TO_LEADS)
    bot.slack.groups["S0LEADS"] = [BOB]
    value = await bot.start()
    bot.clock.advance(STEP)
    await Scheduler(bot.services).tick()  # escalated to the leads
    bot.slack.groups["S0LEADS"] = [BOB, MALLORY]  # Mallory joins the rotation
    bot.clock.advance(timedelta(minutes=1))  # Slack is asked at most once a minute
    ts = _card_in(bot, LEADS)
    await bot.click(ids.APPROVE, value, user=MALLORY, channel=LEADS, message_ts=ts)
    await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and (record.state, record.decided_by) == ("approved", MALLORY)
    assert bot.slack.called("chat.postEphemeral") == []


async def test_a_trust_given_by_someone_who_left_the_group_approves_nothing(
    make_bot: Any,
) -> None:
    """A grant outlives nobody's right to decide: it is checked like the granter's click."""
    trusting = Policy(
        channel=CHANNEL, groups=(ONCALL,), trust=Remember(scope="minutes", minutes=60)
    )
    bot: Harness = await make_bot(trusting)
    bot.slack.groups[ONCALL] = [ALICE, BOB]
    value = await bot.start()
    await bot.click(ids.TRUST, value, user=ALICE)
    await bot.finished()
    # The trust is kept by the click decider, before it tells the requester, not before
    # the resumed run's result.
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"<@{CAROL}> :white_check_mark:") for t in bot.thread()),
        what="the requester told",
    )

    async def next_run() -> InterruptRecord:
        """A later run's card, once its run has been posted and its trust checked."""
        place = Place(channel=CHANNEL, thread_ts=None, requested_by=MALLORY)
        result = await start_run(bot.services, "cleanup", "clean up", place=place)
        [asked] = result.interrupts
        record = await bot.services.storage.queries.get(record_id(result.run_id, asked.id))
        assert record is not None
        return record

    covered = await next_run()  # while Alice is on call, her trust approves it
    assert (covered.state, covered.decided_by) == ("approved", ALICE)

    bot.slack.groups[ONCALL] = [BOB]  # Alice leaves the rotation
    bot.clock.advance(timedelta(minutes=6))  # past how long a group's list is kept
    asked = await next_run()
    assert asked.state == "pending" and asked.votes == ()
    assert asked.policy.group_members == (BOB,)


async def test_a_refused_deny_form_names_the_group_without_slack_markup(make_bot: Any) -> None:
    """A modal's error is plain text: the group who may approve is named as ``@S…``, as a
    user is, not as markup Slack would show raw."""
    bot, value = await _bot_for_oncall(make_bot, ALICE)
    status, body = await bot.submit(ids.DENY_VIEW, value, user=MALLORY, text="not today")

    assert status == 200 and "errors" in body
    assert f"Who may approve: @{ONCALL}, not the requester." in body, body
    assert "<" not in body.split('"errors"', 1)[1]
