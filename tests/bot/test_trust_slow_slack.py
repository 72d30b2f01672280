"""A trust is kept before the card that shows it is drawn: while Slack is slow to redraw
that card, the run (resumed by the same decision) goes on, and its next call of the tool
is covered by the trust the card is about to show, not left waiting for a person."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from harness import ALICE, BOB, Harness
from trust_runs import approved_without_a_click, held_cards, start_cleanup, trust_policy

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy
from bot.decisions.clicks import made_final
from bot.schedule.scheduler import Scheduler
from bot.ui import ids

NEXT_CALL = ({"paths": ["/tmp/c"]},)
"""The run's second call of the trusted tool, asked once the first has run."""


def _slow_to_redraw(bot: Harness, monkeypatch: pytest.MonkeyPatch, ts: str) -> asyncio.Event:
    """Slack answers no redraw of the card at ``ts`` until the event is set."""
    update = bot.services.client.chat_update
    answer = asyncio.Event()

    async def slow(**kwargs: Any) -> Any:
        if kwargs.get("ts") == ts:
            await answer.wait()
        return await update(**kwargs)

    monkeypatch.setattr(bot.services.client, "chat_update", slow)
    return answer


def _trust_value(card: dict[str, Any]) -> str:
    [value] = [e["value"] for e in card["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    return str(value)


async def test_a_trusted_cards_slow_redraw_does_not_leave_the_runs_next_call_asking(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot(trust_policy(), then=NEXT_CALL)
    card = await start_cleanup(bot)
    answer = _slow_to_redraw(bot, monkeypatch, bot.message_ts())
    try:
        await bot.click(ids.TRUST, _trust_value(card), user=ALICE)
        await approved_without_a_click(bot, 2)  # the first card not yet redrawn
    finally:
        answer.set()
    await bot.slack.wait_for(
        lambda: any(
            u["ts"] == bot.message_ts() and "Trusted until" in str(u["blocks"])
            for u in bot.slack.called("chat.update")
        ),
        what="the trusted card redrawn",
    )


async def test_a_held_trusts_slow_redraw_when_final_does_not_leave_the_runs_next_call_asking(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The undo window ends while Slack is slow: the next call is approved under the trust
    (held in its own window) before the first card is drawn final."""
    window = timedelta(seconds=60)
    policy = Policy(
        users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60), undo_window=window
    )
    bot: Harness = await make_bot(policy, then=NEXT_CALL)
    card = await start_cleanup(bot)
    await bot.click(ids.TRUST, _trust_value(card), user=ALICE)
    await bot.slack.wait_for(lambda: len(held_cards(bot)) == 1, what="Alice's approval, held")
    answer = _slow_to_redraw(bot, monkeypatch, bot.message_ts())
    bot.clock.advance(window * 2)
    tick = asyncio.create_task(Scheduler(bot.services, made_final=made_final).tick())
    try:
        await bot.slack.wait_for(lambda: len(held_cards(bot)) == 2, what="the next call, held")
        assert len(bot.tool_log.calls) == 1 and not tick.done()
    finally:
        answer.set()
    await asyncio.wait_for(tick, 5)
