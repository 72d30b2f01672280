"""An app that answers the next round's interrupts while the request that ran the round
still holds the thread is told the round runs (``round_running``), and no card records
its answers: sent again once the thread is let go, they run the round once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agui_endpoint import Endpoint, run_client, still_pending
from harness import ALICE

from bot.ui import ids


def _approve(interrupt: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}


async def test_answers_refused_while_the_last_round_holds_the_thread_are_recorded_on_no_card(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(then=({"paths": ["/tmp/c"]},))
    bot, url = endpoint.bot, endpoint.url
    [first] = await run_client(url, "thread-held", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]

    redis, let_go, let_gone = bot.services.storage.client, asyncio.Event(), asyncio.Event()
    evaluate = redis.eval

    async def letting_go_later(script: str, keys: list[str], args: list[Any]) -> Any:
        if script != "lease_release" or not keys[0].endswith(":app_run"):
            return await evaluate(script, keys, args)
        await asyncio.wait_for(let_go.wait(), 10)  # the request that ran it holds on
        released = await evaluate(script, keys, args)
        let_gone.set()
        return released

    redis.eval = letting_go_later  # type: ignore[method-assign]
    try:
        [ran] = await run_client(url, "thread-held", [{"resume": [_approve(interrupt)]}])
        [following] = ran["finished"]["outcome"]["interrupts"]
        card = bot.record_id(bot.posted(1)["blocks"][-1]["elements"][0]["value"])
        assert card.endswith("/" + following["id"])  # the next round's card
        [meanwhile] = await run_client(url, "thread-held", [{"resume": [_approve(following)]}])
    finally:
        let_go.set()
        redis.eval = evaluate  # type: ignore[method-assign]
    assert meanwhile["finished"] is None, meanwhile
    assert meanwhile["error"]["code"] == "round_running", meanwhile
    assert await still_pending(endpoint, card)
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]

    await asyncio.wait_for(let_gone.wait(), 10)
    [after] = await run_client(url, "thread-held", [{"resume": [_approve(following)]}])
    assert after["finished"]["outcome"] == {"type": "success"}, after
    assert not await still_pending(endpoint, card)
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]


async def test_an_answer_whose_card_was_decided_first_is_told_so_while_the_thread_is_held(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """A card Alice decided in Slack is told as decided there, not as a running round, to
    an app answering it while another request holds the thread; nothing is recorded."""
    endpoint = await endpoint_for()
    bot, url = endpoint.bot, endpoint.url
    [first] = await run_client(url, "thread-decided", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    assert (await bot.click(ids.APPROVE, value, user=ALICE)).status == 200
    await bot.finished()
    async with bot.services.storage.app_runs.running("thread-decided") as alone:
        assert alone  # held here, as another request taking its answers would
        [told] = await run_client(url, "thread-decided", [{"resume": [_approve(interrupt)]}])
    assert told["finished"] is None, told
    assert told["error"]["code"] == "decided_elsewhere", told
    assert f"approved in Slack by {ALICE}" in told["error"]["message"]
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
