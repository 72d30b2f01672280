"""A request whose stored record is damaged: every action on it is answered, nothing is
decided, nothing retries forever, and an operator can find it."""

from __future__ import annotations

from typing import Any

from harness import ALICE, Harness

from bot.ui import ids
from bot.ui.refusals import DAMAGED


async def _damage(bot: Harness, value: str) -> str:
    key = bot.services.storage.keys.record(bot.record_id(value))
    await bot.services.storage.client.raw.hset(key, "interrupt", '{"not": "an interrupt"}')
    return key


async def test_an_approval_of_a_damaged_record_is_refused_reported_and_not_retried(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    key = await _damage(bot, value)

    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    await bot.loops.stop()  # the decider acknowledges what it handled

    assert [n["text"] for n in bot.slack.called("chat.postEphemeral")] == [DAMAGED]
    assert await bot.services.storage.client.raw.hget(key, "state") == "pending"
    assert await bot.services.storage.clicks.lag() == 0  # handled once, not retried
    audit = await bot.services.storage.audit.read()
    [damaged] = [e for e in audit if e.event == "damaged"]
    assert damaged.record_id == bot.record_id(value) and damaged.user_id == ALICE
    async with bot.http.get(bot.url + "/metrics") as response:
        assert "signoff_damaged_records_total 1" in await response.text()
    assert bot.tool_log.calls == []


async def test_a_modal_on_a_damaged_record_says_so_not_that_storage_is_down(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.services.storage.client.raw.hset(
        bot.services.storage.keys.record(bot.record_id(value)), "policy", "{broken"
    )

    await bot.click(ids.DENY, value, user=ALICE)
    await bot.slack.wait_calls("chat.postEphemeral")
    assert bot.slack.called("views.open") == []
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="no")
    assert status == 200 and DAMAGED in body
    assert [n["text"] for n in bot.slack.called("chat.postEphemeral")] == [DAMAGED]


async def test_a_damaged_record_left_out_of_the_pending_list_is_logged_and_counted(
    make_bot: Any, caplog: Any
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await _damage(bot, value)
    await bot.services.storage.client.raw.hset(
        bot.services.storage.keys.record(bot.record_id(value)), "policy", "{broken"
    )
    answer = await bot.command("", user=ALICE)
    assert answer["text"] == "0 waiting for you"
    assert any("corrupt" in r.getMessage() for r in caplog.records if r.levelname == "ERROR")
    assert any("unreadable records left the pending list" in r.getMessage() for r in caplog.records)
    async with bot.http.get(bot.url + "/metrics") as response:
        assert "signoff_damaged_records_read_total 1" in await response.text()
