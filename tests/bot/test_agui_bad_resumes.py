"""Bad AG-UI requests are told what is wrong and change nothing: an unknown agent, a
body too large, a resume naming an interrupt the thread does not have, a number JSON
cannot hold."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import aiohttp
from agui_endpoint import TOKEN, Endpoint, answer_one, ask_one, run_raw, still_pending
from harness import ALICE, BOB, CHANNEL

from agent_runtime import Agent, ScriptedModel, ToolCall, tool
from bot.agents.policy import AgentSpec, Policy

AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


async def test_an_unknown_agent_or_a_huge_body_is_refused_before_anything_runs(
    endpoint: Endpoint,
) -> None:
    other = endpoint.url.rsplit("/", 1)[0] + "/nope"
    async with aiohttp.ClientSession() as http:
        async with http.post(other, data=b"{}", headers=AUTH) as unknown:
            assert unknown.status == 404
            assert "no agent named 'nope'" in (await unknown.json())["error"]
        huge = b'{"threadId": "t", "runId": "r", "pad": "' + b"x" * 5_000_000 + b'"}'
        async with http.post(endpoint.url, data=huge, headers=AUTH) as large:
            assert large.status == 413
            assert "error" in await large.json()
    assert endpoint.bot.tool_log.calls == []
    assert endpoint.bot.slack.called("chat.postMessage") == []


async def test_a_resume_naming_another_threads_interrupt_is_a_run_error_and_decides_nothing(
    endpoint: Endpoint,
) -> None:
    mine, my_card = await ask_one(endpoint, "thread-mine")
    for iid in (mine["id"], "no-such-interrupt"):
        resume = [{"interruptId": iid, "status": "resolved", "payload": {"type": "approve"}}]
        events = await run_raw(
            endpoint, {"threadId": "thread-other", "runId": "r", "resume": resume}
        )
        assert [e["type"] for e in events][-1] == "RUN_ERROR", events
        assert "thread-other has no open interrupts" in events[-1]["message"]
        assert "RUN_FINISHED" not in [e["type"] for e in events]
    both = [
        {"interruptId": i, "status": "resolved", "payload": {"type": "approve"}}
        for i in (mine["id"], "no-such-interrupt")
    ]
    events = await run_raw(endpoint, {"threadId": "thread-mine", "runId": "r", "resume": both})
    assert events[-1]["type"] == "RUN_ERROR" and "no-such-interrupt" in events[-1]["message"]
    assert await still_pending(endpoint, my_card)
    assert endpoint.bot.tool_log.calls == []


async def test_an_edit_holding_nan_is_refused_and_the_card_then_takes_a_good_one(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    """Python's JSON parser reads ``NaN`` and ``Infinity``, which a run's state cannot keep:
    an app's edit holding one was recorded on the card, and every resume of the run failed
    its save, leaving the thread waiting on a card already decided (every new prompt
    refused). The body is refused as not JSON; the card is still the app's to answer."""
    scaled: list[float] = []

    @tool
    def scale(ratio: float) -> str:
        """Scale the service."""
        scaled.append(ratio)
        return f"scaled by {ratio}"

    model = ScriptedModel([[ToolCall(id="c1", name="scale", args={"ratio": 0.5})], "done"])
    spec = AgentSpec(
        name="cleanup",
        build=lambda sessions: Agent(
            model=model, tools=[scale], interrupt_on={"scale": True}, session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE, BOB), decisions=("approve", "edit")),
    )
    endpoint = await endpoint_for(spec=spec)
    interrupt, rid = await ask_one(endpoint, "thread-nan")
    for number, why in (
        ("NaN", "NaN is not a JSON number"),
        ("-Infinity", "-Infinity is not a JSON number"),
        ("1e999", "1e999 is too large a number"),
    ):
        edit = {"type": "edit", "args": {"ratio": "NUMBER"}}
        answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": edit}
        body = json.dumps({"threadId": "thread-nan", "runId": "r", "resume": [answer]})
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                endpoint.url, data=body.replace('"NUMBER"', number).encode(), headers=AUTH
            ) as refused,
        ):
            assert refused.status == 400
            said = (await refused.json())["error"]
            assert said.startswith("the body must be a RunAgentInput as JSON") and why in said
    assert await still_pending(endpoint, rid)
    good = {"type": "edit", "args": {"ratio": 0.25}}
    seen = await answer_one(
        endpoint, "thread-nan", interrupt["id"], status="resolved", payload=good
    )
    assert seen["error"] is None and seen["finished"]["outcome"] == {"type": "success"}
    assert scaled == [0.25]
