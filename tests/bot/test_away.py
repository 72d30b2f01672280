"""``/signoff away until <date> to @someone``: while an approver is away, requests posted
ask their delegate, who may decide; the card says for whom; both commands are audited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness
from redis_faults import reply_lost_once

from bot.agents.policy import Escalate, Policy
from bot.schedule.scheduler import Scheduler
from bot.ui import ids


async def test_a_delegate_decides_while_the_approver_is_away_and_not_after(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    answer = await bot.command(f"away until {back_on} to <@{BOB}|bob>", user=ALICE)
    assert f"ask <@{BOB}> in your place" in answer["text"], answer
    audit = await bot.services.storage.audit.read(count=20)
    [away] = [e for e in audit if e.event == "away"]
    assert away.user_id == ALICE and away.detail.endswith(f"delegate {BOB}")

    value = await bot.start(requested_by=CAROL)
    card = str(bot.posted(0)["blocks"])
    assert f"<@{BOB}> for <@{ALICE}>, who is away" in card
    await bot.click(ids.APPROVE, value, user=BOB)
    assert (await bot.finished()).startswith("Finished: done: deleted 2 file(s)")
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]

    answer = await bot.command("back", user=ALICE)
    assert answer["text"].startswith("Welcome back")
    posted = len(bot.slack.called("chat.postMessage"))
    value = await bot.start(requested_by=CAROL)
    assert "who is away" not in str(bot.posted(-1)["blocks"])
    await bot.click(ids.APPROVE, value, user=BOB, message_ts=bot.message_ts(posted))
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]


async def test_away_commands_that_cannot_be_noted_say_why_and_note_nothing(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    soon = (bot.clock.now() + timedelta(days=3)).date().isoformat()
    answers = {
        "away until tomorrow": "is not a date like YYYY-MM-DD",
        "away until 1`<!channel>": "`1\u02cb&lt;!channel&gt;` is not a date",  # shown, not obeyed
        "away until 2020-01-01": "That date has passed",
        "away until 2099-01-01": "at most a year",
        f"away until {soon} to @bob": "Name who decides for you as a mention",
        f"away until {soon} to <@{MALLORY}|me>": "must be someone else",
        "away": "Use `/signoff away until",
        "back": "You were not marked away",
    }
    for text, says in answers.items():
        answer = await bot.command(text, user=MALLORY)
        assert says in answer["text"], (text, answer)
    assert await bot.services.storage.away.of([MALLORY], bot.clock.now()) == {}
    assert await bot.services.storage.audit.read() == []  # "nothing changed", nor audited


async def test_coming_back_is_audited(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{BOB}|bob>", user=ALICE)
    answer = await bot.command("back", user=ALICE)
    assert answer["text"].startswith("Welcome back")
    audit = await bot.services.storage.audit.read(count=20)
    [back] = [e for e in audit if e.event == "back"]
    assert back.user_id == ALICE and back.at == bot.clock.now()
    assert await bot.services.storage.away.of([ALICE], bot.clock.now()) == {}


async def test_coming_back_whose_reply_was_lost_is_welcomed_back(make_bot: Any) -> None:
    """Redis noted Alice back, then its reply was lost and the call was sent again: she is
    welcomed back (and it is audited), not told she was not marked away."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{BOB}|bob>", user=ALICE)
    with reply_lost_once(naming=":away:taken:") as lost:
        answer = await bot.command("back", user=ALICE)
    assert lost == ["EVALSHA"]
    assert answer["text"].startswith("Welcome back")
    audit = await bot.services.storage.audit.read(count=20)
    assert [e.user_id for e in audit if e.event == "back"] == [ALICE]
    assert await bot.services.storage.away.of([ALICE], bot.clock.now()) == {}


async def test_a_card_posted_before_the_approver_went_away_does_not_ask_the_delegate(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    value = await bot.start(requested_by=CAROL)
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{BOB}|bob>", user=ALICE)

    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert record.policy.allowed_users == (ALICE,) and record.policy.stand_ins == ()
    assert bot.tool_log.calls == []


async def test_away_until_a_date_ends_at_its_start_in_the_approvers_own_time_zone(
    make_bot: Any,
) -> None:
    """Alice is in Paris (UTC+1 in November): away until the 25th ends at 23:00 UTC on the
    24th, an hour before the 25th begins in UTC."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    assert bot.clock.now().isoformat() == "2026-11-23T10:00:00+00:00"
    await bot.command(f"away until 2026-11-25 to <@{BOB}|bob>", user=ALICE)

    bot.clock.advance(timedelta(hours=36, minutes=30))  # 24th, 22:30 UTC: 23:30 in Paris
    await bot.start(requested_by=CAROL)
    assert f"<@{BOB}> for <@{ALICE}>, who is away" in str(bot.posted(-1)["blocks"])

    bot.clock.advance(timedelta(hours=1))  # 23:30 UTC: 00:30 on the 25th in Paris
    posted = len(bot.slack.called("chat.postMessage"))
    await bot.start(requested_by=CAROL)
    assert len(bot.slack.called("chat.postMessage")) == posted + 1
    assert "who is away" not in str(bot.posted(-1)["blocks"])
    assert await bot.services.storage.away.of([ALICE], bot.clock.now()) == {}


async def test_someone_away_and_their_stand_in_are_one_vote_of_a_quorum(make_bot: Any) -> None:
    """Alice names Mallory while away: the two of them must not make a 2-of-2 alone."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{MALLORY}|mallory>", user=ALICE)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    refused = bot.slack.called("chat.postEphemeral")[-1]
    assert refused["user"] == MALLORY and "already counted (1 of 2)" in refused["text"]
    assert bot.tool_log.calls == []
    await bot.click(ids.APPROVE, value, user=BOB)
    assert (await bot.finished()).startswith("Finished: done")
    assert len(bot.tool_log.calls) == 1


async def test_nobody_stands_in_for_the_requester_who_may_not_approve_their_own(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB)))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{MALLORY}|mallory>", user=ALICE)
    value = await bot.start(requested_by=ALICE)  # Alice asks, so Alice may not decide
    assert "who is away" not in str(bot.posted(0)["blocks"])
    await bot.click(ids.APPROVE, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert bot.tool_log.calls == []


async def test_a_delegate_who_asked_or_approves_anyway_stands_in_for_nobody(
    make_bot: Any,
) -> None:
    """Paired with their delegate, the away approver would count as the requester (Carol
    asks), or as their co-approver (Bob): either pairing leaves too few voices to approve."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    for runs, delegate in enumerate((CAROL, BOB), start=1):
        await bot.command(f"away until {back_on} to <@{delegate}|someone>", user=ALICE)
        value = await bot.start(requested_by=CAROL)
        assert "who is away" not in str(bot.posted()["blocks"])
        record = await bot.services.storage.queries.get(bot.record_id(value))
        assert record is not None and record.policy.stand_ins == ()
        for user in (ALICE, BOB):
            await bot.click(ids.APPROVE, value, user=user, message_ts=bot.message_ts(-1))
        await bot.slack.wait_for(lambda n=runs: len(bot.tool_log.calls) == n, what="the tool")


async def test_an_escalation_step_asks_the_delegate_of_its_approver_who_is_away(
    make_bot: Any,
) -> None:
    new_york = "C0NYC"
    step = Escalate(channel=new_york, users=(BOB,), expires_after=timedelta(hours=4))
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(hours=1),
        on_expiry=step,
        reminders=None,
    )
    bot: Harness = await make_bot(policy)
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    await bot.command(f"away until {back_on} to <@{MALLORY}|mallory>", user=BOB)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(hours=1))
    await Scheduler(bot.services).tick()
    calls, answers = bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage")
    posts = zip(calls, answers, strict=True)
    [(card, answer)] = [(p, a) for p, a in posts if p["channel"] == new_york]
    assert f"<@{MALLORY}>" in card["text"]  # the delegate is asked
    await bot.click(ids.APPROVE, value, user=MALLORY, channel=new_york, message_ts=answer["ts"])
    assert (await bot.finished()).startswith("Finished")
    assert bot.slack.called("chat.postEphemeral") == []
