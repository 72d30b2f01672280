"""A round the app answered is never left waiting: the run goes on when the app's run fails,
when the app goes away, or when its process dies, and the cards say how it went."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import aiohttp
from agui_endpoint import TOKEN, Endpoint, answer_one, run_client
from harness import ALICE, BOB, CHANNEL, Harness, ToolLog, cleanup_spec
from strands_agents import SlowDelete, failing_after_the_tool

from agent_runtime.messages import args_digest
from bot.agents.policy import AgentSpec, Escalate, Policy
from bot.api.agui_cards import answer_cards
from bot.schedule.scheduler import Scheduler
from signoff.strands import StrandsAgent
from storage.decisions import APP_HOLD


async def test_an_app_run_that_fails_after_its_answer_is_recorded_is_run_on_by_the_worker(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app's answer decided the card, then its run failed (the model, after the
    approved tool ran): the worker runs the thread on, and the tool does not run again."""
    ran: list[list[str]] = []
    spec = AgentSpec(
        name="st-flaky",
        build=lambda sessions: StrandsAgent(failing_after_the_tool(ran), session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    endpoint = await endpoint_for(spec=spec)
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/st-flaky")
    _, second = await run_client(
        url,
        "thread-app-fails",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["finished"] is None and second["error"]["code"] == "internal_error"
    assert "Signoff's resume worker runs the thread on" in second["error"]["message"]
    assert (await bot.finished()).startswith("Finished: done (success): deleted 1")
    assert ran == [["/tmp/a"]]


async def test_an_app_that_goes_away_mid_run_does_not_stop_the_run(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    slow = SlowDelete()
    endpoint = await endpoint_for(spec=slow.spec(Policy(channel=CHANNEL, users=(ALICE,))))
    bot, url = endpoint.bot, endpoint.url.replace("/cleanup", "/st-slow")
    [first] = await run_client(url, "thread-gone", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": "thread-gone", "runId": "r2", "resume": [answer]}
    async with aiohttp.ClientSession() as http:
        response = await http.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
        assert b"RUN_STARTED" in await response.content.readline()
        await slow.entered()
        response.close()  # the app goes away while the approved tool runs
    slow.release.set()
    assert (await bot.finished()).startswith("Finished: done (success): deleted")
    assert slow.ran == [["/tmp/a"]]


async def test_a_round_whose_app_died_after_answering_is_run_on_by_the_worker(
    endpoint: Endpoint,
) -> None:
    """The app's answer decided the card, then its process died before running the round:
    once its hold lapses, the scheduler hands the round to the resume worker."""
    bot = endpoint.bot
    [first] = await run_client(endpoint.url, "thread-app-died", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    body = {"threadId": "thread-app-died", "runId": "r2", "resume": [answer]}
    answers = await answer_cards(bot.services, bot.services.registry.agent("cleanup"), body)
    assert answers.refusal is None and answers.app_round is not None
    await Scheduler(bot.services).tick()
    assert bot.tool_log.calls == []  # the app holds the round: nothing is handed over yet

    bot.clock.advance(APP_HOLD + timedelta(seconds=1))
    await Scheduler(bot.services).tick()
    assert "deleted 2 file(s)" in await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_the_cards_are_posted_before_the_app_hears_the_run_stopped(
    endpoint: Endpoint,
) -> None:
    """An app may answer the moment it reads RUN_FINISHED: the cards are there by then."""
    prompt = {"runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "clean up"}]}
    body = {"threadId": "thread-quick", **prompt}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(endpoint.url, json=body, headers=headers) as response,
    ):
        async for line in response.content:
            if b'"RUN_FINISHED"' in line:
                assert len(endpoint.bot.slack.called("chat.postMessage")) == 1
                break
        else:
            raise AssertionError("no RUN_FINISHED")


async def test_an_escalated_card_takes_the_apps_answer_and_the_run_goes_on(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The card escalated when its first wait ran out: it waits another hour, and the
    app's approval within it runs the call (the card's expiry counts, not the first one)."""
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(milliseconds=1),
        on_expiry=(Escalate(channel=CHANNEL, users=(BOB,), expires_after=timedelta(hours=1)),),
        reminders=None,
    )
    endpoint = await endpoint_for(policy)
    [first] = await run_client(endpoint.url, "thread-escalated", [{"prompt": "clean up"}])
    [interrupt] = first["finished"]["outcome"]["interrupts"]
    endpoint.bot.clock.advance(timedelta(seconds=1))
    await Scheduler(endpoint.bot.services).tick()
    record = await endpoint.bot.services.storage.queries.get(
        endpoint.bot.record_id(endpoint.bot.posted(0)["blocks"][-1]["elements"][0]["value"])
    )
    assert record is not None and record.escalated
    seen = await answer_one(
        endpoint,
        "thread-escalated",
        interrupt["id"],
        status="resolved",
        payload={"type": "approve"},
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert endpoint.bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def _trust_next_call(bot: Harness, paths: list[str]) -> None:
    """Alice trusts ``delete_files`` of ``paths`` in the channel: its card is approved in
    her name the moment it is posted."""
    now = bot.clock.now()
    await bot.services.storage.trust.grant(
        agent="cleanup",
        tool="delete_files",
        channel=CHANNEL,
        args_digest=args_digest({"paths": paths}),
        granted_by=ALICE,
        granted_at=now,
        expires_at=now + timedelta(hours=1),
        record_id="run_earlier/int_earlier",
    )


async def test_a_trusted_call_after_a_round_the_app_ran_runs_as_its_own_round(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """The app answers the first card; its run asks a call a trust covers, approved as its
    card is posted: the resume worker runs that round alone, and the run ends."""
    log = ToolLog()
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB))
    endpoint = await endpoint_for(
        policy, spec=cleanup_spec(log, policy, then=({"paths": ["/tmp/c"]},))
    )
    await _trust_next_call(endpoint.bot, ["/tmp/c"])
    _, second = await run_client(
        endpoint.url,
        "thread-trusted",
        [
            {"prompt": "clean up"},
            {"answer": {"status": "resolved", "payload": {"type": "approve"}}},
        ],
    )
    assert second["error"] is None and second["finished"]["outcome"]["type"] == "interrupt"
    assert (await endpoint.bot.finished()).startswith("Finished")
    assert log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]
