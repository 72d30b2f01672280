"""Withdrawing a pending request from its card's overflow menu: the requester or an
admin; the run is cancelled and nothing it waited on runs."""

from __future__ import annotations

from typing import Any

from harness import ALICE, BOB, CAROL, MALLORY, Harness

from bot.ui import ids


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
    assert "changed nothing" in bot.slack.called("chat.postEphemeral")[-1]["text"]
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
