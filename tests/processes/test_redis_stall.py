"""A Redis that stalls for 8 s under ten clicks, with real ``signoff serve`` processes:
the chaos suite's scenario (``bench.chaos frozen``), held to what its clickers were told."""

from __future__ import annotations

from bench.chaos_redis import frozen


async def test_clicks_made_while_redis_stalls_land_once_it_answers_and_nothing_said_is_untrue() -> (
    None
):
    """Each click was acked in time and told it was not confirmed yet, to watch the card:
    the stall outlasts redis-py's own retries, and every click still lands, once."""
    figures = await frozen()
    assert figures["frozen_acks_over_3s"] == 0
    assert figures["frozen_told_unconfirmed"] == figures["frozen_clicks"] == 10
    assert figures["frozen_decided"] == figures["frozen_runs_finished"] == 10, figures
    assert figures["frozen_untrue_messages"] == 0
