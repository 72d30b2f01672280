"""Withdrawing a pending request from its card's overflow menu: the requester or an
admin; the run is cancelled and nothing it waited on runs."""

from __future__ import annotations

from typing import Any

import batch_agents
from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.ui import ids
from bot.ui.refusals import STORAGE_DOWN
from storage.errors import StorageTimeoutError, StorageUnavailableError


async def _withdraw(bot: Harness, value: str, *, user: str) -> None:
    record_id = bot.record_id(value)
    await bot.click(ids.MORE, "", user=user, selected=f"{ids.WITHDRAW} {record_id}")


def _more_menu(bot: Harness) -> dict[str, Any]:
    [menu] = [e for e in bot.posted()["blocks"][-1]["elements"] if e["type"] == "overflow"]
    return menu


async def test_the_requester_withdraws_from_the_card_and_the_run_is_cancelled(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    menu = _more_menu(bot)
    assert menu["options"][0]["text"]["text"] == "Withdraw request"
    assert menu["confirm"]["style"] == "danger"

    await _withdraw(bot, value, user=CAROL)
    await bot.slack.wait_calls("chat.update")
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"] == "Withdrawn: delete_files"
    assert f"Withdrawn by <@{CAROL}>" in str(update["blocks"])
    assert "Reason" not in str(update["blocks"])  # Slack gave none; not the raw id again
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in bot.thread()),
        what="the withdrawal in the thread",
    )
    status = await bot.services.registry.agent("cleanup").thread_status(
        (await bot.services.storage.queries.get(bot.record_id(value))).thread_id  # type: ignore[union-attr]
    )
    assert status is not None and status.status == "idle"
    assert status.last_result is not None and status.last_result.stop_reason == "cancelled"

    # A click after the withdrawal decides nothing; the tool never ran.
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    told = bot.slack.called("chat.postEphemeral")[-1]["text"]
    assert told == f"This request was withdrawn by <@{CAROL}>; your click changed nothing."
    assert bot.tool_log.calls == []


async def test_only_the_requester_or_an_admin_may_withdraw(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    await _withdraw(bot, value, user=MALLORY)
    await bot.slack.wait_calls("chat.postEphemeral")
    note = bot.slack.called("chat.postEphemeral")[-1]
    assert note["user"] == MALLORY
    assert f"Only the requester (<@{CAROL}>) or a Signoff admin" in note["text"]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending"

    admin: Harness = await make_bot(admins=(BOB,))
    await _withdraw(admin, value, user=BOB)
    await admin.slack.wait_for(
        lambda: any(
            f"Withdrawn by <@{BOB}>" in str(u["blocks"]) for u in admin.slack.called("chat.update")
        ),
        what="the card withdrawn by the admin",
    )

    # Carol is told, in the thread, that someone else withdrew her request.
    def told() -> list[str]:
        return [t for t in admin.thread() if t.startswith(f"<@{CAROL}>")]

    await admin.slack.wait_for(lambda: len(told()) == 1, what="the requester told")
    assert f"Withdrawn by <@{BOB}>" in told()[0]


async def _two_cards(make_bot: Any) -> tuple[Harness, list[str], str, str]:
    """A run Carol started that asks about two calls on two cards, A and B: the bot, the
    files deleted so far, and the cards' button values."""
    deleted: list[str] = []
    spec = batch_agents.spec(deleted, ["/tmp/a", "/tmp/b"], batch=False)
    bot: Harness = await make_bot(spec=spec)
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_calls("chat.postMessage", 2)
    value_a, value_b = (bot.posted(n)["blocks"][-1]["elements"][0]["value"] for n in (0, 1))
    return bot, deleted, str(value_a), str(value_b)


async def test_a_run_is_withdrawn_whole_while_one_of_its_cards_is_approved(
    make_bot: Any,
) -> None:
    """Cards A and B of one run: Carol withdraws from A just as Alice approves B (after the
    withdrawal read the run's open cards). The cancel sees the change and cancels what is
    still open in one step; B's approval waited for A, so nothing runs, as the thread says."""
    bot, deleted, value_a, value_b = await _two_cards(make_bot)
    storage = bot.services.storage
    run_script = storage.client.eval
    tries: list[str] = []

    async def approved_after_the_read(name: str, *args: Any) -> Any:
        if name == "cancel":
            tries.append(name)
        if len(tries) == 1 and name == "cancel":
            await bot.click(ids.APPROVE, value_b, user=ALICE, message_ts=bot.message_ts(1))
            await bot.slack.wait_for(
                lambda: any(u["ts"] == bot.message_ts(1) for u in bot.slack.called("chat.update")),
                what="card B approved",
            )
        return await run_script(name, *args)

    storage.client.eval = approved_after_the_read  # type: ignore[method-assign]
    await _withdraw(bot, value_a, user=CAROL)
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in bot.thread()),
        what="the withdrawal in the thread",
    )
    assert len(tries) == 2  # read again: the run changed under the first read
    a, b = [await storage.queries.get(bot.record_id(v)) for v in (value_a, value_b)]
    assert a is not None and b is not None and (a.state, b.state) == ("cancelled", "approved")
    assert deleted == []
    streams = [storage.keys.resume_stream(shard) for shard in storage.keys.all_shards]
    assert [await storage.client.raw.xlen(s) for s in streams] == [0] * len(streams)


async def _b_decided_then_run_withdrawn(
    make_bot: Any, how: str
) -> tuple[dict[str, Any], list[Any]]:
    """Cards A and B of one run: Alice decides B (``how``), which waits for A; Carol
    withdraws the run from A. B's card as last drawn, and what the tool deleted."""
    bot, deleted, value_a, value_b = await _two_cards(make_bot)
    ts_b = bot.message_ts(1)
    await bot.decide(how, value_b, user=ALICE, message_ts=ts_b)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == ts_b for u in bot.slack.called("chat.update")), what="B decided"
    )
    await _withdraw(bot, value_a, user=CAROL)
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in bot.thread()),
        what="the withdrawal in the thread",
    )
    return [u for u in bot.slack.called("chat.update") if u["ts"] == ts_b][-1], deleted


async def test_a_card_approved_while_its_run_waited_says_the_withdrawal_stopped_it(
    make_bot: Any,
) -> None:
    """Cards A and B of one run: Alice approves B, which waits for A; Carol withdraws the
    run from A. B's card keeps Alice's approval and says it never ran."""
    card_b, deleted = await _b_decided_then_run_withdrawn(make_bot, "approve")
    assert card_b["blocks"][0]["text"]["text"].startswith("Approved")
    assert f"Not run: <@{CAROL}> withdrew the run" in str(card_b["blocks"])
    assert deleted == []


async def test_withdrawing_from_one_card_redraws_the_runs_other_pending_card(
    make_bot: Any,
) -> None:
    """Cards A and B of one run, both pending: Carol withdraws from A. Both are cancelled
    in one step, so B's card must stop asking too."""
    bot, deleted, value_a, value_b = await _two_cards(make_bot)
    ts_b = bot.message_ts(1)
    await _withdraw(bot, value_a, user=CAROL)
    await bot.slack.wait_for(
        lambda: any(u["ts"] == ts_b for u in bot.slack.called("chat.update")),
        what="card B redrawn",
    )
    card_b = [u for u in bot.slack.called("chat.update") if u["ts"] == ts_b][-1]
    assert card_b["blocks"][0]["text"]["text"].startswith("Withdrawn: ")
    assert not any(block["type"] == "actions" for block in card_b["blocks"])
    record_b = await bot.services.storage.queries.get(bot.record_id(value_b))
    assert record_b is not None and record_b.state == "cancelled"
    assert deleted == []


async def test_a_withdrawal_storage_kept_is_carried_through_when_its_read_back_fails(
    make_bot: Any,
) -> None:
    """Storage cancels the run, then fails the read of the withdrawn record: the
    withdrawal happened, so the clicker is not told nothing was recorded, the agent's run
    is cancelled, and the card stops asking."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    record_id = bot.record_id(value)
    queries = bot.services.storage.queries
    read = queries.get
    cancelled: list[str] = []

    async def unreachable_after_the_cancel(rid: str) -> Any:
        if cancelled:
            raise StorageUnavailableError("connection refused")
        return await read(rid)

    cancel_run = bot.services.storage.interrupts.cancel_run

    async def cancel_then_note(run_id: str, **kwargs: Any) -> Any:
        result = await cancel_run(run_id, **kwargs)
        cancelled.append(run_id)
        return result

    queries.get = unreachable_after_the_cancel  # type: ignore[method-assign]
    bot.services.storage.interrupts.cancel_run = cancel_then_note  # type: ignore[method-assign]
    await _withdraw(bot, value, user=CAROL)
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in bot.thread()),
        what="the withdrawal in the thread",
    )
    await bot.services.background.idle()
    assert STORAGE_DOWN not in [e["text"] for e in bot.slack.called("chat.postEphemeral")]
    queries.get = read  # type: ignore[method-assign]
    record = await read(record_id)
    assert record is not None and record.state == "cancelled"
    status = await bot.services.registry.agent("cleanup").thread_status(record.thread_id)
    assert status is not None and status.last_result is not None
    assert status.last_result.stop_reason == "cancelled"
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"] == "Withdrawn: delete_files"
    assert not any(block["type"] == "actions" for block in update["blocks"])


async def test_a_withdrawal_redis_confirmed_late_still_cancels_the_agents_run(
    make_bot: Any,
) -> None:
    """Redis cancels the run but its answer times out: the withdrawal is carried through
    (the agent's run cancelled, the card and thread saying so), not reported as unrecorded
    and left with a run that waits forever."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    interrupts = bot.services.storage.interrupts
    cancel_run = interrupts.cancel_run
    tries: list[str] = []

    async def answered_too_late_once(run_id: str, **kwargs: Any) -> Any:
        result = await cancel_run(run_id, **kwargs)
        tries.append(run_id)
        if len(tries) == 1:
            raise StorageTimeoutError("Redis did not answer in time")
        return result

    interrupts.cancel_run = answered_too_late_once  # type: ignore[method-assign]
    await _withdraw(bot, value, user=CAROL)
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>") for t in bot.thread()),
        what="the withdrawal in the thread",
    )
    await bot.services.background.idle()
    assert bot.slack.called("chat.postEphemeral") == []
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "cancelled"
    status = await bot.services.registry.agent("cleanup").thread_status(record.thread_id)
    assert status is not None and status.last_result is not None
    assert status.last_result.stop_reason == "cancelled"
    assert bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"] == (
        "Withdrawn: delete_files"
    )


async def test_a_card_denied_while_its_run_waited_says_the_denial_never_reached_the_agent(
    make_bot: Any,
) -> None:
    """Cards A and B of one run: Alice denies B, which waits for A; Carol withdraws the run
    from A. B was never going to run: its card says the denial never reached the agent."""
    decided_b, deleted = await _b_decided_then_run_withdrawn(make_bot, "reject")
    card_b = str(decided_b["blocks"])
    assert f"Never passed on to the agent: <@{CAROL}> withdrew the run" in card_b, card_b
    assert "Not run" not in card_b
    assert deleted == []
