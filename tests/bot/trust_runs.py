"""Cleanup runs under a policy offering "Approve and trust", and the cards they post; shared
by the trust test files."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, Harness

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.ui import ids


def trust_policy(**trust: Any) -> Policy:
    """Alice or Bob approves, and may trust the tool for 60 minutes on the terms ``trust`` adds."""
    return Policy(users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60, **trust))


async def start_cleanup(bot: Harness, channel: str = CHANNEL) -> dict[str, Any]:
    """Start a cleanup run from ``channel``; its card, once posted."""
    before = len(posted_cards(bot))
    place = Place(channel=channel, thread_ts=None, requested_by=CAROL)
    await start_run(bot.services, "cleanup", "clean up", place=place)
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) > before, what="the card")
    return posted_cards(bot)[before]


def posted_cards(bot: Harness) -> list[dict[str, Any]]:
    """Every card posted so far (a message with blocks), in order."""
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


async def approved_without_a_click(bot: Harness, runs: int) -> None:
    """Wait until the tool has run ``runs`` times in all, the later ones with no click."""
    await bot.slack.wait_for(lambda: len(bot.tool_log.calls) == runs, what=f"{runs} runs")


async def trust_held(make_bot: Any, window: timedelta) -> Harness:
    """A bot whose policy offers trust for an hour behind an undo ``window``, and Alice's
    "Approve and trust" held in that window."""
    policy = Policy(
        users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60), undo_window=window
    )
    bot: Harness = await make_bot(policy)
    card = await start_cleanup(bot)
    [value] = [e["value"] for e in card["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    await bot.click(ids.TRUST, value, user=ALICE)
    await bot.slack.wait_for(lambda: len(held_cards(bot)) == 1, what="Alice's approval, held")
    return bot


def held_cards(bot: Harness) -> set[str]:
    """The cards that were shown held in their undo window, with Undo."""
    return {
        str(u["ts"])
        for u in bot.slack.called("chat.update")
        if "not yet final" in str(u["blocks"]) and ids.UNDO in str(u["blocks"])
    }
