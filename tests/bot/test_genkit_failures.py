"""Genkit runs that fail: a resume retried after the tool ran gets its saved result, and a
failed model call is an error, never an empty answer."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from adapter_checks import record_unchecked_edit
from aiohttp.test_utils import TestServer
from genkit import (
    Genkit,
    Interrupt,
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    ToolRunContext,
)
from genkit_agents import Paths, define_delete_files, genkit_spec
from harness import ALICE, CAROL, CHANNEL, Harness
from pydantic import SecretStr

from agent_runtime import Decision
from agent_runtime.errors import ModelError, ResumeError
from agent_runtime.run_events import RunFinished, ToolCallFinished
from bot.agents.policy import AgentSpec, Policy
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from signoff.genkit import GenkitAgent
from storage import Storage


async def test_a_resume_retried_after_the_tool_ran_gets_its_result_without_running_it_again(
    storage: Storage,
) -> None:
    ai, ran, failed = Genkit(), [], []

    async def fails_once_after_the_tool(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a"]}, ref="c1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        if not failed:
            failed.append(True)
            raise ConnectionError("the model is unreachable")
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="flaky", fn=fails_once_after_the_tool)
    define_delete_files(ai, ran)

    agent = GenkitAgent(ai, model="flaky", tools=["delete_files"], session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_retried")).interrupts
    decision = {asked.id: Decision.approve()}
    with pytest.raises(ModelError, match="the Genkit generation failed"):
        await agent.invoke(decision, thread_id="thread_retried")
    assert ran == [["/tmp/a"]]
    status = await agent.thread_status("thread_retried")
    assert status is not None and [i.id for i in status.interrupts] == [asked.id]

    done = await agent.invoke(decision, thread_id="thread_retried")  # the worker's retry
    assert done.message == "done: deleted 1"
    assert ran == [["/tmp/a"]]
    stored = await storage.sessions.load("thread_retried")
    assert stored is not None and "kept" not in stored.snapshot


async def test_a_retry_with_another_answer_after_the_tool_ran_is_told_it_ran(
    storage: Storage,
) -> None:
    """An app (no cards) whose resume failed after the approved tool ran, retrying with a
    denial, is told the tool ran and on which answer; that answer then goes on."""
    ai, ran, failed = Genkit(), [], []

    async def fails_once_after_the_tool(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a"]}, ref="c1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        if not failed:
            failed.append(True)
            raise ConnectionError("the model is unreachable")
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="flaky", fn=fails_once_after_the_tool)
    define_delete_files(ai, ran)
    agent = GenkitAgent(ai, model="flaky", tools=["delete_files"], session_store=storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_changed")).interrupts
    with pytest.raises(ModelError):
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_changed")
    before = await storage.sessions.load("thread_changed")

    for other in (Decision.reject("no"), Decision.edit({"paths": ["/tmp/b"]})):
        with pytest.raises(ResumeError) as refused:
            await agent.invoke({asked.id: other}, thread_id="thread_changed")
        assert f"{asked.id} delete_files (it ran): approve" in str(refused.value)
    assert await storage.sessions.load("thread_changed") == before  # nothing changed
    done = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_changed")
    assert done.message == "done: deleted 1"
    assert ran == [["/tmp/a"]]


def model_down_spec() -> AgentSpec:
    """A Genkit agent whose model is unreachable."""
    ai = Genkit()

    async def unreachable(request: ModelRequest, ctx: Any) -> ModelResponse:
        raise ConnectionError("the model is unreachable")

    ai.define_model(name="down", fn=unreachable)
    return AgentSpec(
        name="gk-down",
        build=lambda sessions: GenkitAgent(ai, model="down", tools=[], session_store=sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


async def test_a_failed_model_call_is_an_error_not_an_empty_answer(storage: Storage) -> None:
    agent = model_down_spec().build(storage.sessions)
    with pytest.raises(ModelError, match="the Genkit generation failed"):
        await agent.invoke("clean up", thread_id="thread_down")
    assert await storage.sessions.load("thread_down") is None  # nothing claims it finished


async def test_signoff_run_of_an_agent_that_fails_says_so_to_the_requester(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=model_down_spec())
    answer = await bot.command("run gk-down tidy the disk", user=CAROL)
    assert answer["text"].startswith("Starting gk-down")
    await bot.slack.wait_calls("chat.postMessage")
    [said] = bot.slack.called("chat.postMessage")
    assert said["channel"] == CHANNEL
    assert said["text"] == (
        f"The run of gk-down failed (ModelError); see the bot's log.\ncc <@{CAROL}>"
    )


async def test_the_runs_api_answers_an_agents_failure_in_json(make_bot: Any) -> None:
    bot: Harness = await make_bot(spec=model_down_spec())
    token = "api-token-" + "x" * 24
    app = operator_app(bot.services, api_token=SecretStr(token))
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{server.port}{RUNS_PATH}"
            body = {"agent": "gk-down", "input": "tidy", "channel": CHANNEL}
            async with http.post(url, json=body, headers={"Authorization": f"Bearer {token}"}) as r:
                assert r.status == 500
                assert (await r.json())["error"] == (
                    "the run of gk-down failed (ModelError); see the bot's log"
                )
    finally:
        await server.close()


async def test_a_tool_that_raised_in_a_resume_is_not_run_again_by_the_retry(
    storage: Storage,
) -> None:
    """Genkit ends the generation when a tool raises, and the worker retries the resume:
    the retry does not start the tool again (it may have done part of its work), tells
    the model and the thread so, as a failure, and refuses other answers."""
    ai, started = Genkit(), []

    async def asks_then_reports(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a"]}, ref="c1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    @ai.tool()
    async def delete_files(input: Paths, ctx: ToolRunContext) -> str:
        """Delete files, once a person approves; the disk fails half way the first time."""
        if not ctx.is_resumed():
            raise Interrupt({"message": "Delete?"})
        started.append(input.paths)
        if len(started) == 1:
            raise OSError("the disk went away half way")
        return f"deleted {len(input.paths)}"

    ai.define_model(name="scripted", fn=asks_then_reports)
    agent = GenkitAgent(
        ai, model="scripted", tools=["delete_files"], session_store=storage.sessions
    )
    [asked] = (await agent.invoke("clean up", thread_id="thread_raised")).interrupts
    decision = {asked.id: Decision.approve()}
    with pytest.raises(ModelError):
        await agent.invoke(decision, thread_id="thread_raised")
    assert started == [["/tmp/a"]]

    with pytest.raises(ResumeError) as refused:
        await agent.invoke({asked.id: Decision.reject("no")}, thread_id="thread_raised")
    assert f"{asked.id} delete_files (it started): approve" in str(refused.value)

    events = [e async for e in agent.stream(decision, thread_id="thread_raised")]  # the retry
    assert started == [["/tmp/a"]]
    said = (
        "delete_files was not run again: an earlier try of this resume started it and failed "
        "before its result was saved, so it may have done some or all of its work"
    )
    [told] = [e for e in events if isinstance(e, ToolCallFinished)]
    assert (told.tool_call.name, told.result.content, told.result.is_error) == (
        "delete_files",
        said,
        True,
    )
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.result.message == f"done: {said}"


async def test_an_edit_that_does_not_fit_the_tool_is_told_at_once_and_runs_nothing(
    make_bot: Any,
) -> None:
    """Genkit checks a restarted tool's input before it runs: an edit that does not fit (one
    recorded unchecked; the Edit modal now refuses it) is refused on every try, so the
    thread is told what does not fit, at once, and not that the tool may have done part of
    its work."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    await record_unchecked_edit(bot, value, {"paths": "/tmp/a"})
    await bot.slack.wait_for(
        lambda: any(t.startswith("Could not resume this run:") for t in bot.thread()),
        what="why the run was not resumed",
    )
    [told] = [t for t in bot.thread() if t.startswith("Could not resume this run:")]
    assert "delete_files" in told and "paths" in told and "valid list" in told, told
    assert "will not be retried" in told
    assert deleted == []
    assert not [
        e for e in await bot.services.storage.audit.read(count=100) if e.event.startswith("tool_")
    ]
