"""An app whose resume stream was cut off (its connection dropped, or the bot's process
died, while the round ran) sends the same resume again, with the real client: it hears
how the round went, or that it still runs, and no tool runs twice."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from agui_endpoint import Endpoint, cut_off, round_ran, run_client
from harness import ALICE, CHANNEL
from strands_agents import SlowDelete

from bot.agents.policy import Policy
from bot.api.agui_cards import answer_cards
from bot.schedule.scheduler import Scheduler
from storage.decisions import APP_HOLD


def _approve(interrupt: dict[str, Any]) -> dict[str, Any]:
    return {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}


async def test_a_resume_cut_off_mid_round_sent_again_hears_it_runs_then_how_it_ended(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    slow = SlowDelete()
    endpoint = await endpoint_for(spec=slow.spec(Policy(channel=CHANNEL, users=(ALICE,))))
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/st-slow")
    [first] = await run_client(url, "thread-cut", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    await cut_off(url, "thread-cut", [_approve(interrupt)])
    await slow.entered()  # the approved tool runs, unwatched

    [meanwhile] = await run_client(url, "thread-cut", [{"resume": [_approve(interrupt)]}])
    assert meanwhile["finished"] is None and meanwhile["error"]["code"] == "round_running"
    assert "send this resume again once it ends" in meanwhile["error"]["message"]

    slow.release.set()
    assert (await bot.finished()).startswith("Finished: done (success): deleted")
    [after] = await run_client(url, "thread-cut", [{"resume": [_approve(interrupt)]}])
    assert after["error"] is None, after
    assert after["finished"]["outcome"] == {"type": "success"}
    assert "deleted" in after["finished"]["result"]
    assert slow.ran == [["/tmp/a"]]  # once, however often the resume was sent


async def test_a_resume_sent_again_after_its_round_stopped_hears_the_next_interrupts(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    endpoint = await endpoint_for(then=({"paths": ["/tmp/c"]},))
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-next", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    await cut_off(endpoint.url, "thread-next", [_approve(interrupt)])
    cards = lambda: [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]  # noqa: E731
    await bot.slack.wait_for(lambda: len(cards()) == 2, what="the next round's card")

    again, next_round = await run_client(
        endpoint.url,
        "thread-next",
        [
            {"resume": [_approve(interrupt)]},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert again["error"] is None, again
    [asked] = again["finished"]["outcome"]["interrupts"]
    assert asked["id"] != interrupt["id"] and again["pending"] == [asked["id"]]
    assert next_round["finished"]["outcome"] == {"type": "success"}, next_round
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]


async def test_a_resume_whose_bot_died_mid_round_sent_again_hears_the_workers_outcome(
    endpoint: Endpoint,
) -> None:
    """The app's answer decided the card, then the bot's process died before the round
    ran: sent again, the resume is told the round still runs; once the hold lapses and the
    resume worker has run it, sent again, it hears how it ended."""
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-died", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    body = {"threadId": "thread-died", "runId": "r2", "resume": [_approve(interrupt)]}
    answers = await answer_cards(bot.services, bot.services.registry.agent("cleanup"), body)
    assert answers.refusal is None and answers.app_round is not None  # then the process dies

    [meanwhile] = await run_client(endpoint.url, "thread-died", [{"resume": body["resume"]}])
    assert meanwhile["error"]["code"] == "round_running", meanwhile
    assert "already approved in the app by this same answer" in meanwhile["error"]["message"]
    assert bot.tool_log.calls == []

    bot.clock.advance(APP_HOLD + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    assert "deleted 2 file(s)" in await bot.finished()
    [after] = await run_client(endpoint.url, "thread-died", [{"resume": body["resume"]}])
    assert after["finished"]["outcome"] == {"type": "success"}, after
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_without_cards_a_resume_sent_again_hears_the_next_interrupts_once_stopped(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """No card records the app's answer: the thread keeps its last resume. The same resume
    sent again hears the round's stop; another answer to the same interrupt is refused."""
    endpoint = await endpoint_for(policy=Policy(users=(ALICE,)), then=({"paths": ["/tmp/c"]},))
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-alone", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    stopped = round_ran(bot)
    await cut_off(endpoint.url, "thread-alone", [_approve(interrupt)])
    await asyncio.wait_for(stopped.wait(), 10)  # the round stopped at the next call, unwatched

    denied = {**_approve(interrupt), "payload": {"type": "reject"}}
    refused, again, next_round = await run_client(
        endpoint.url,
        "thread-alone",
        [
            {"resume": [denied]},
            {"resume": [_approve(interrupt)]},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert refused["finished"] is None and refused["error"] is not None, refused
    assert again["error"] is None, again
    [asked] = again["finished"]["outcome"]["interrupts"]
    assert asked["id"] != interrupt["id"] and again["pending"] == [asked["id"]]
    assert next_round["finished"]["outcome"] == {"type": "success"}, next_round
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]
    assert bot.slack.called("chat.postMessage") == []  # no card was ever posted


async def test_without_cards_a_resume_sent_again_mid_round_is_told_to_try_again(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    slow = SlowDelete()
    endpoint = await endpoint_for(spec=slow.spec(Policy(users=(ALICE,))))
    url = endpoint.url.replace("/cleanup", "/st-slow")
    [first] = await run_client(url, "thread-alone-slow", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    await cut_off(url, "thread-alone-slow", [_approve(interrupt)])
    await slow.entered()  # the approved tool runs, unwatched
    [meanwhile] = await run_client(url, "thread-alone-slow", [{"resume": [_approve(interrupt)]}])
    assert meanwhile["error"]["code"] == "round_running", meanwhile
    assert "send this again once it ends" in meanwhile["error"]["message"]
    ended = round_ran(endpoint.bot)
    slow.release.set()
    await asyncio.wait_for(ended.wait(), 10)
    [after] = await run_client(url, "thread-alone-slow", [{"resume": [_approve(interrupt)]}])
    assert after["finished"]["outcome"] == {"type": "success"}, after
    assert slow.ran == [["/tmp/a"]]
