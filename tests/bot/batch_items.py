"""A batch item decided on its own, as another process did; shared by the batch card test
files."""

from __future__ import annotations

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
