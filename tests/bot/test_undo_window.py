"""An undo window on the real Bolt app: the deciding click is shown as not yet final with
Undo, nothing runs until the window ends, Undo reopens the card, and a restart inside the
window neither loses nor doubles the run."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import batch_agents
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness, card_now
from undo_cards import WINDOW, headline

from bot.agents.policy import Escalate, Policy
from bot.decisions.clicks import decide_click, made_final
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from bot.ui.refusals import UNCONFIRMED
from storage.errors import StorageTimeoutError

POLICY = Policy(channel=CHANNEL, users=(ALICE, BOB), undo_window=WINDOW)


def _buttons(card: dict[str, Any]) -> list[str]:
    return [e["action_id"] for e in card["blocks"][-1]["elements"]]


def _told(bot: Harness, requester: str) -> list[str]:
    """What the thread told the requester of the decision (a line addressed to them)."""
    return [t for t in bot.thread() if t.startswith(f"<@{requester}>")]


async def _ephemeral(bot: Harness, count: int) -> str:
    await bot.slack.wait_calls("chat.postEphemeral", count)
    return str(bot.slack.called("chat.postEphemeral")[-1]["text"])


async def test_nothing_runs_in_the_window_and_undo_reopens_the_card(make_bot: Any) -> None:
    bot: Harness = await make_bot(POLICY)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    held = card_now(bot)
    assert held["blocks"][0]["text"]["text"] == "Approved, not yet final: delete_files"
    note = str(held["blocks"])
    assert f"Approved by <@{ALICE}>: runs at <!date^" in note
    assert "unless someone clicks Undo" in note
    assert _buttons(held) == [ids.UNDO, ids.MORE]

    # Another approver's click in the window changes nothing, and says why.
    await bot.click(ids.APPROVE, value, user=BOB)
    assert (await _ephemeral(bot, 1)).startswith(f"Already decided by <@{ALICE}>")
    # Someone who may not decide cannot undo either.
    await bot.click(ids.UNDO, value, user=MALLORY)
    assert "not among the approvers" in await _ephemeral(bot, 2)

    await bot.click(ids.UNDO, value, user=BOB)
    await bot.slack.wait_for(
        lambda: card_now(bot)["blocks"][0]["text"]["text"] == "Approval needed: delete_files",
        what="the card reopened",
    )
    reopened = str(card_now(bot)["blocks"])
    assert f"<@{BOB}> undid the decision of <@{ALICE}>" in reopened
    assert ids.APPROVE in _buttons(card_now(bot))
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"<@{BOB}> undid the decision") for t in bot.thread()),
        what="the undo in the thread",
    )

    # The window's end finds nothing held: nothing runs, nobody is told of a decision.
    bot.clock.advance(WINDOW * 2)
    await Scheduler(bot.services, made_final=made_final).tick()
    assert bot.tool_log.calls == []
    assert not any("cc <@" in t for t in bot.thread())


async def test_the_decision_takes_effect_once_when_the_window_ends(make_bot: Any) -> None:
    bot: Harness = await make_bot(POLICY)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    scheduler = Scheduler(bot.services, made_final=made_final)
    bot.clock.advance(WINDOW - timedelta(seconds=1))
    await scheduler.tick()
    assert bot.tool_log.calls == []  # still undoable

    bot.clock.advance(timedelta(seconds=1))
    await bot.click(ids.UNDO, value, user=BOB)  # the window has ended: too late
    assert "undo window has ended" in await _ephemeral(bot, 1)
    await scheduler.tick()
    assert (await bot.finished()).startswith("Finished: done: deleted 2 file(s)")
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert card_now(bot)["blocks"][0]["text"]["text"] == "Approved: delete_files"
    assert f"Approved by <@{ALICE}>" in str(card_now(bot)["blocks"])
    await scheduler.tick()  # released once
    assert len(bot.tool_log.calls) == 1


async def test_a_restart_inside_the_window_runs_the_tool_exactly_once(make_bot: Any) -> None:
    first: Harness = await make_bot(POLICY)
    value = await first.start(requested_by=CAROL)
    await first.click(ids.APPROVE, value, user=ALICE)
    await first.slack.wait_calls("chat.update")
    await first.loops.stop()  # the process that took the click is gone

    second: Harness = await make_bot(POLICY)
    second.clock.current = first.clock.current + WINDOW
    await Scheduler(second.services, made_final=made_final).tick()
    await Scheduler(second.services, made_final=made_final).tick()  # a second scheduler
    assert (await second.finished()).startswith("Finished: done: deleted 2 file(s)")
    assert len(first.tool_log.calls) + len(second.tool_log.calls) == 1


async def test_the_requester_is_told_once_when_the_window_ends_and_not_at_the_click(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(POLICY, deciders=0)  # the click is decided here, in step
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    [entry] = await bot.services.storage.clicks.claim("decider", count=10)
    await decide_click(bot.services, entry)
    await bot.services.background.idle()  # all the click's work, its news included, is done
    assert card_now(bot)["blocks"][0]["text"]["text"] == "Approved, not yet final: delete_files"
    assert _told(bot, CAROL) == []

    bot.clock.advance(WINDOW)
    await Scheduler(bot.services, made_final=made_final).tick()
    await bot.services.background.idle()
    [told] = _told(bot, CAROL)
    assert f"Approved by <@{ALICE}>" in told
    await bot.finished()
    await Scheduler(bot.services, made_final=made_final).tick()
    assert len(_told(bot, CAROL)) == 1


async def test_an_escalation_open_to_its_channel_lets_its_members_undo_only_from_its_card(
    make_bot: Any,
) -> None:
    """Bob is named nowhere: he may undo as a member of the escalation channel, which only
    a click on its card shows, never from the first card (or any member could hold the
    request back forever)."""
    escalation = "C0ESCALATE"
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=escalation, anyone_in_channel=True),
        undo_window=WINDOW,
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    bot.clock.advance(timedelta(minutes=31))
    await Scheduler(bot.services).tick()
    card_ts = next(
        str(a["ts"]) for a in bot.slack.answers("chat.postMessage") if a["channel"] == escalation
    )
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_for(
        lambda: "not yet final" in str(card_now(bot)["blocks"]), what="the held approval"
    )
    await bot.click(ids.UNDO, value, user=BOB)  # on the first card
    assert "not among the approvers" in await _ephemeral(bot, 1)
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.held is not None

    await bot.click(ids.UNDO, value, user=BOB, channel=escalation, message_ts=card_ts)
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"<@{BOB}> undid the decision") for t in bot.thread()),
        what="the undo from the escalation card",
    )


async def test_the_requester_may_not_undo_a_decision_on_their_own_request(make_bot: Any) -> None:
    bot: Harness = await make_bot(
        Policy(channel=CHANNEL, users=(ALICE, BOB, CAROL), undo_window=WINDOW)
    )
    value = await bot.start(requested_by=CAROL)  # Carol asks, so Carol may not decide
    status, _ = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert status == 200
    await bot.slack.wait_for(
        lambda: "not yet final" in str(card_now(bot)["blocks"]), what="the held denial"
    )
    await bot.click(ids.UNDO, value, user=CAROL)
    assert "someone else has to decide" in await _ephemeral(bot, 1)
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.held is not None and record.held.by == ALICE


async def test_a_quorums_held_card_and_its_undo_name_every_approver(make_bot: Any) -> None:
    """Alice and Bob make a 2-of-3 quorum, held for its undo window: the card credits both,
    and Mallory's undo says it discarded both approvals, as it does."""
    policy = Policy(
        channel=CHANNEL, users=(ALICE, BOB, MALLORY), min_approvals=2, undo_window=WINDOW
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.slack.wait_for(
        lambda: "not yet final" in card_now(bot)["blocks"][0]["text"]["text"], what="held"
    )
    assert f"Approved by <@{ALICE}>, <@{BOB}>: runs at" in str(card_now(bot)["blocks"])
    await bot.click(ids.UNDO, value, user=MALLORY)
    await bot.slack.wait_for(
        lambda: any("undid the decision" in t for t in bot.thread()), what="the undo's note"
    )
    note = next(t for t in bot.thread() if "undid the decision" in t)
    assert note.startswith(f"<@{MALLORY}> undid the decision of <@{ALICE}>, <@{BOB}>:"), note
    assert f"undid the decision of <@{ALICE}>, <@{BOB}>" in str(card_now(bot)["blocks"])
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.approvals == () and record.state == "pending"


async def test_an_undo_redis_confirmed_late_is_not_called_unrecorded(make_bot: Any) -> None:
    """Redis takes the Undo but its answer times out: the clicker is told it is not
    confirmed (not that nothing was recorded), and the card is redrawn from storage, so it
    asks for a decision again instead of showing the undone approval."""
    bot: Harness = await make_bot(POLICY)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    interrupts = bot.services.storage.interrupts
    undo = interrupts.undo

    async def answered_too_late(*args: Any, **kwargs: Any) -> Any:
        await undo(*args, **kwargs)
        raise StorageTimeoutError("Redis did not answer in time")

    interrupts.undo = answered_too_late  # type: ignore[method-assign]
    await bot.click(ids.UNDO, value, user=BOB)
    assert await _ephemeral(bot, 1) == UNCONFIRMED
    await bot.services.background.idle()
    bot.clock.advance(timedelta(seconds=31))  # before the window's end
    await Scheduler(bot.services).redraw_cards()
    assert headline(bot) == "Approval needed: delete_files"


async def test_a_held_edit_or_denial_shows_what_takes_effect(make_bot: Any) -> None:
    """Whoever may Undo sees what the held decision does: the edited arguments that will
    run (not only the ones asked), or the reason a denial gives."""
    bot: Harness = await make_bot(POLICY)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("edit", value, user=ALICE)
    await bot.slack.wait_for(lambda: "not yet final" in headline(bot), what="held")
    blocks = card_now(bot)["blocks"]
    sections = [b["text"]["text"] for b in blocks if b["type"] == "section"]
    assert any(s.startswith("*Run with*") and '"/tmp/a"' in s for s in sections), sections
    assert not any('"/tmp/b"' in s for s in sections if s.startswith("*Run with*"))

    await bot.click(ids.UNDO, value, user=BOB)
    await bot.slack.wait_for(lambda: headline(bot) == "Approval needed: delete_files")
    await bot.decide("reject", value, user=BOB)
    await bot.slack.wait_for(lambda: headline(bot).startswith("Denied, not yet final"))
    sections = [b["text"]["text"] for b in card_now(bot)["blocks"] if b["type"] == "section"]
    assert "*Reason:* not today" in sections, sections


async def test_a_click_on_a_held_quorum_names_every_approver_and_when_it_is_final(
    make_bot: Any,
) -> None:
    """Mallory clicks after Alice and Bob made the quorum: she is told it was both of them,
    as the card says, and at what time it becomes final."""
    policy = Policy(
        channel=CHANNEL, users=(ALICE, BOB, MALLORY), min_approvals=2, undo_window=WINDOW
    )
    bot: Harness = await make_bot(policy)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, value, user=BOB)
    await bot.slack.wait_for(lambda: "not yet final" in headline(bot), what="held")
    await bot.click(ids.APPROVE, value, user=MALLORY)
    told = await _ephemeral(bot, 1)
    assert told.startswith(f"Already decided by <@{ALICE}>, <@{BOB}>: it becomes final at "), told


async def test_a_held_approval_whose_run_waits_on_another_card_does_not_say_it_runs_then(
    make_bot: Any,
) -> None:
    """Cards A and B of one run: Alice approves B in its window while A waits. B is final
    at the window's end, but runs only once A is decided too: its card says so."""
    deleted: list[str] = []
    spec = batch_agents.spec(deleted, ["/tmp/a", "/tmp/b"], batch=False, undo_window=WINDOW)
    bot: Harness = await make_bot(spec=spec)
    await start_run(
        bot.services,
        "cleanup",
        "x",
        place=Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL),
    )
    await bot.slack.wait_calls("chat.postMessage", 2)
    ts_b = bot.message_ts(1)
    await bot.click(
        ids.APPROVE,
        bot.posted(1)["blocks"][-1]["elements"][0]["value"],
        user=ALICE,
        message_ts=ts_b,
    )
    await bot.slack.wait_for(
        lambda: any(u["ts"] == ts_b for u in bot.slack.called("chat.update")), what="B held"
    )
    held = str([u for u in bot.slack.called("chat.update") if u["ts"] == ts_b][-1]["blocks"])
    assert f"Approved by <@{ALICE}>: final at <!date^" in held, held
    assert "unless someone clicks Undo; it runs once its run's other requests are decided" in held
    assert "runs at" not in held
    assert deleted == []
