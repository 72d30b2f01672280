"""The click hot path: acked by the HTTP handler, decided from a bounded queue."""

from __future__ import annotations

import asyncio
from typing import Any

from harness import ALICE, BOB, Harness

from bot.ui import ids


async def test_a_burst_of_clicks_is_acked_and_every_click_decided_once(make_bot: Any) -> None:
    bot: Harness = await make_bot(workers=0)
    posted = []
    for n in range(30):
        value = await bot.start(f"clean up {n}")
        posted.append((value, str(bot.slack.answers("chat.postMessage")[-1]["ts"])))

    clicks = [
        bot.click(ids.APPROVE, value, user=user, message_ts=ts)
        for value, ts in posted
        for user in (ALICE, BOB)  # the second approval of each is refused
    ]
    responses = await asyncio.gather(*clicks)

    assert [r.status for r in responses] == [200] * len(clicks)
    await bot.slack.wait_calls("chat.update", len(posted))
    await bot.slack.wait_calls("chat.postEphemeral", len(posted))
    await bot.services.background.idle()
    assert len(bot.slack.called("chat.update")) == len(posted)
    for value, _ in posted:
        record = await bot.services.storage.queries.get(bot.record_id(value))
        assert record is not None and record.state == "approved"
        assert len(record.votes) == 1
