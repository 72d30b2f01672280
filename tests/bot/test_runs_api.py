"""The runs API over real HTTP: a job outside Slack starts an agent with the API token,
the interrupt is posted and approved in Slack, and the job follows the run to its end."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from fakes import Fault
from harness import ALICE, BOB, CHANNEL, Harness
from pydantic import SecretStr
from runs_api import AUTH, TOKEN, Api, served_runs_api
from strands_agents import gated_spec

from bot.agents.policy import Escalate, Policy
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from bot.schedule.scheduler import Scheduler
from bot.ui import ids


@pytest.fixture(params=["socket", "http"])
async def api(make_bot: Any, request: pytest.FixtureRequest) -> AsyncIterator[Api]:
    """A bot, and the URL of its runs API: served beside /metrics as in Socket Mode, or
    beside /slack/events as in HTTP mode."""
    async with served_runs_api(await make_bot(), request.param) as served:
        yield served


async def test_a_job_starts_a_run_and_follows_it_to_its_end(
    api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bot, url, http = api.bot, api.url, api.http
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    async with http.post(url, json={**start, "requested_by": "nightly-job"}, headers=AUTH) as r:
        assert r.status == 201
        started = await r.json()
    assert started["stop_reason"] == "interrupt"
    [interrupt] = started["interrupts"]
    assert interrupt["name"] == "approval" and interrupt["reason"]["tool"] == "delete_files"
    [post] = bot.slack.called("chat.postMessage")
    assert post["channel"] == CHANNEL and "Requested by nightly-job" in str(post["blocks"])

    status_url = url.removesuffix(RUNS_PATH) + started["status_url"]
    async with http.get(status_url, headers=AUTH) as r:
        waiting = await r.json()
    assert waiting["status"] == "interrupted" and waiting["interrupts"] == [interrupt]

    value = post["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    async with http.get(status_url, headers=AUTH) as r:
        done = await r.json()
    assert done["status"] == "idle" and done["interrupts"] == []
    assert done["last_result"]["stop_reason"] == "end_turn"
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    assert TOKEN not in caplog.text


async def test_an_interrupt_whose_card_slack_refused_says_why(api: Api) -> None:
    bot, url, http = api.bot, api.url, api.http
    refused = Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    bot.slack.faults["chat.postMessage"].append(refused)
    start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
    async with http.post(url, json=start, headers=AUTH) as r:
        assert r.status == 201
        started = await r.json()
    [interrupt] = started["interrupts"]
    assert interrupt["not_posted"] == "not_in_channel"
    status_url = url.removesuffix(RUNS_PATH) + started["status_url"]
    async with http.get(status_url, headers=AUTH) as r:
        assert [i["not_posted"] for i in (await r.json())["interrupts"]] == ["not_in_channel"]

    bot.clock.advance(timedelta(seconds=31))
    await Scheduler(bot.services).tick()  # the app was invited: the outbox posts it
    async with http.get(status_url, headers=AUTH) as r:
        assert [i["not_posted"] for i in (await r.json())["interrupts"]] == [None]


async def test_a_job_starts_a_strands_agent_and_follows_it_to_its_end(make_bot: Any) -> None:
    """A Strands agent is registered like any agent: the runs API starts it, its gate's
    interrupt is a card, and once approved the job reads the run's end."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=gated_spec(deleted))
    server = TestServer(operator_app(bot.services, api_token=SecretStr(TOKEN)), port=0)
    await server.start_server()
    url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
    try:
        async with aiohttp.ClientSession() as http:
            start = {"agent": "st-cleanup", "input": "clean up", "channel": CHANNEL}
            async with http.post(url, json=start, headers=AUTH) as r:
                assert r.status == 201
                started = await r.json()
            [interrupt] = started["interrupts"]
            assert interrupt["reason"]["args"] == {"paths": ["/tmp/a", "/tmp/b"]}
            status_url = url.removesuffix(RUNS_PATH) + started["status_url"]
            async with http.get(status_url, headers=AUTH) as r:
                assert (await r.json())["status"] == "interrupted"
            assert deleted == []
            await bot.click(
                ids.APPROVE, bot.posted(0)["blocks"][-1]["elements"][0]["value"], user=ALICE
            )
            await bot.finished()
            async with http.get(status_url, headers=AUTH) as r:
                done = await r.json()
    finally:
        await server.close()
    assert done["status"] == "idle" and done["interrupts"] == []
    assert done["last_result"]["message"] == "done (success): deleted 2"
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_an_escalation_card_slack_refused_says_why(make_bot: Any) -> None:
    """The step's card Slack refused: the run's status names the step's channel and what
    Slack answered, until the outbox posts it."""
    refusing = "C0RANDOM"
    policy = Policy(
        channel=CHANNEL,
        users=(ALICE,),
        expires_after=timedelta(minutes=30),
        on_expiry=Escalate(channel=refusing, users=(BOB,), expires_after=timedelta(minutes=30)),
    )
    bot: Harness = await make_bot(policy)
    bot.slack.not_in.add(refusing)
    server = TestServer(operator_app(bot.services, api_token=SecretStr(TOKEN)), port=0)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
            start = {"agent": "cleanup", "input": "clean up", "channel": CHANNEL}
            async with http.post(url, json=start, headers=AUTH) as r:
                started = await r.json()
            [interrupt] = started["interrupts"]
            assert (interrupt["escalation_channel"], interrupt["escalation_not_posted"]) == (
                None,
                None,
            )
            status_url = url.removesuffix(RUNS_PATH) + started["status_url"]

            async def interrupt_now() -> dict[str, Any]:
                async with http.get(status_url, headers=AUTH) as r:
                    [found] = (await r.json())["interrupts"]
                    return dict(found)

            scheduler = Scheduler(bot.services)
            bot.clock.advance(timedelta(minutes=31))
            await scheduler.tick()  # escalated, but Slack refuses the step's card
            found = await interrupt_now()
            assert found["not_posted"] is None
            assert found["escalation_channel"] == refusing
            assert found["escalation_not_posted"] == "not_in_channel"

            bot.slack.not_in.clear()  # the app is invited: the outbox posts it
            bot.clock.advance(timedelta(seconds=31))
            await scheduler.tick()
            found = await interrupt_now()
            assert (found["escalation_channel"], found["escalation_not_posted"]) == (refusing, None)
    finally:
        await server.close()
