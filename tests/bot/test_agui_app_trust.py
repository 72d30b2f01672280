"""Trust and the app: a card gives trust by its own "Approve and trust", so a carded
interrupt does not offer the app a ``remember``, and an answer with one is refused before
its card changes; an interrupt no card asks offers one, and the run honours it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agui_endpoint import Endpoint, answer_one, ask_one, run_client, still_pending
from harness import ALICE, BOB, CHANNEL

from agent_runtime.interrupts import Remember
from bot.agents.policy import Policy

TRUST = {"scope": "minutes", "minutes": 30}


async def test_a_carded_interrupt_offers_no_remember_and_an_answer_with_one_changes_nothing(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    policy = Policy(
        channel=CHANNEL, users=(ALICE, BOB), trust=Remember(scope="minutes", minutes=60)
    )
    endpoint = await endpoint_for(policy, then=({"paths": ["/tmp/c"]},))
    bot = endpoint.bot
    interrupt, rid = await ask_one(endpoint, "thread-trust")
    assert "remember" not in interrupt["responseSchema"]["properties"]
    trusted = {"type": "approve", "remember": TRUST}
    seen = await answer_one(
        endpoint, "thread-trust", interrupt["id"], status="resolved", payload=trusted
    )
    assert seen["finished"] is None and seen["error"]["code"] == "not_offered"
    assert '"Approve and trust"' in seen["error"]["message"]
    assert await still_pending(endpoint, rid)
    assert bot.slack.called("chat.update") == []  # the card was never changed
    assert bot.tool_log.calls == []
    assert await bot.services.storage.trust.active(bot.clock.now()) == []

    approve = {"type": "approve"}
    seen = await answer_one(
        endpoint, "thread-trust", interrupt["id"], status="resolved", payload=approve
    )
    assert seen["error"] is None and bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    record = await bot.services.storage.queries.get(rid)
    assert record is not None and (record.state, record.decided_by) == ("approved", "app")
    [again] = seen["finished"]["outcome"]["interrupts"]  # the next call is asked on its card
    assert "remember" not in again["responseSchema"]["properties"]


async def test_an_interrupt_no_card_asks_offers_remember_and_it_trusts_the_runs_next_call(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(Policy(users=(ALICE,)), then=({"paths": ["/tmp/c"]},))
    [first] = await run_client(endpoint.url, "thread-app", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    assert "remember" in interrupt["responseSchema"]["properties"]
    trusted = {"type": "approve", "remember": {"scope": "run"}}
    seen = await answer_one(
        endpoint, "thread-app", interrupt["id"], status="resolved", payload=trusted
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]
    assert endpoint.bot.slack.called("chat.postMessage") == []  # no channel: no card
