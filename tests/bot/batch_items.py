"""A batch item decided on its own, as another process did, and a batch card as it reads
now; shared by the batch card test files."""

from __future__ import annotations

from typing import Any

from harness import BOB, CHANNEL, Harness

from agent_runtime import Decision
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord


async def decide_item(
    bot: Harness, path: str, decision: Decision
) -> tuple[InterruptRecord, DecideOutcome]:
    """Decide the batch item for ``path`` on its own, as Bob, as another process did."""
    storage = bot.services.storage
    page = await storage.queries.pending_for_channel(CHANNEL, limit=50)
    [item] = [r for r in page.records if r.interrupt["tool_call"]["args"]["path"] == path]
    outcome = await storage.interrupts.decide(
        item.id,
        BOB,
        decision,
        args_digest=item.args_digest,
        now=bot.clock.now(),
        channel=item.channel,
        message_ts=item.message_ts,
    )
    return item, outcome


def card_now(bot: Harness) -> dict[str, Any]:
    """The card as it reads now: its last update, else as posted."""
    updates = bot.slack.called("chat.update")
    return updates[-1] if updates else bot.posted(0)
