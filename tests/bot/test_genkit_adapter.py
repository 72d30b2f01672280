"""The real Genkit SDK (a model defined in the test, offline) as a Signoff agent: a tool's
``Interrupt`` is a card, and each decision through the real Bolt app resumes generation
with ``restart_tool`` (approve, edit) or ``respond_to_interrupt`` (deny, reply)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from adapter_checks import first_telling_dies, interrupts_keep_their_time, tool_audits
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
from harness import ALICE, CAROL, CHANNEL, Harness
from pydantic import BaseModel, SecretStr

from agent_runtime import Decision
from agent_runtime.agui import run_agui
from agent_runtime.errors import ModelError, ResumeError, ThreadBusyError
from bot.agents.policy import AgentSpec, Policy
from bot.api.runs import RUNS_PATH
from bot.process.web import operator_app
from bot.ui import ids
from signoff.genkit import GenkitAgent
from storage import Storage


class Paths(BaseModel):
    paths: list[str]


def define_delete_files(ai: Genkit, deleted: list[list[str]]) -> None:
    """The gated tool: it asks first (Genkit's ``Interrupt``), and runs once restarted."""

    @ai.tool()
    async def delete_files(input: Paths, ctx: ToolRunContext) -> str:
        """Delete files, once a person approves."""
        if not ctx.is_resumed():
            raise Interrupt({"message": f"Delete {len(input.paths)} files?"})
        deleted.append(input.paths)
        return f"deleted {len(input.paths)}"


def genkit_spec(deleted: list[list[str]]) -> AgentSpec:
    ai = Genkit()

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Asks to delete two files; once a tool's answer is in, reports it."""
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a", "/tmp/b"]}, ref="call_1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="scripted", fn=scripted)
    define_delete_files(ai, deleted)
    return AgentSpec(
        name="gk-cleanup",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["delete_files"], session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


@pytest.mark.parametrize(
    ("how", "ran", "says"),
    [
        ("approve", [["/tmp/a", "/tmp/b"]], "done: deleted 2"),
        ("edit", [["/tmp/a"]], "done: deleted 1"),
        ("reject", [], "done: Not approved: not today"),
        ("respond", [], "done: done by hand"),
    ],
)
async def test_each_decision_resumes_the_genkit_generation_as_it_says(
    make_bot: Any, how: str, ran: list[list[str]], says: str
) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    card = bot.posted(0)
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_files"
    assert "Delete 2 files?" in str(card["blocks"]) and "/tmp/b" in str(card["blocks"])
    await bot.decide(how, value, user=ALICE)
    assert (await bot.finished()).startswith(f"Finished: {says}")
    assert deleted == ran


async def test_another_bot_process_resumes_the_generation(make_bot: Any) -> None:
    deleted: list[list[str]] = []
    first: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await first.start(requested_by=CAROL)
    await first.loops.stop()  # the conversation is in Redis: another process resumes it
    second: Harness = await make_bot(spec=genkit_spec(deleted))
    await second.click(ids.APPROVE, value, user=ALICE)
    assert (await second.finished()).startswith("Finished: done: deleted 2")
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_an_interrupt_keeps_the_time_it_was_asked_so_its_expiry_does_not_move(
    storage: Storage,
) -> None:
    await interrupts_keep_their_time(genkit_spec([]).build(storage.sessions))


async def test_a_withdrawal_while_a_resume_holds_the_thread_is_refused_and_changes_nothing(
    storage: Storage,
) -> None:
    """A resume running the tool holds the thread's lease: withdrawing then must not clear
    the interrupt, or the card would say that nothing ran while the tool runs."""
    agent = genkit_spec([]).build(storage.sessions)
    asked = await agent.invoke("clean up", thread_id="thread_busy")
    async with storage.sessions.lease("thread_busy"):
        with pytest.raises(ThreadBusyError):
            await agent.cancel("thread_busy", "withdrawn")
    status = await agent.thread_status("thread_busy")
    assert status is not None
    assert [i.id for i in status.interrupts] == [i.id for i in asked.interrupts]
    assert await agent.cancel("thread_busy", "withdrawn") is not None


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


async def test_a_later_call_with_an_approved_calls_ref_runs_and_gets_its_own_output(
    storage: Storage,
) -> None:
    ai = Genkit()

    async def reuses_its_refs(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Numbers its tool calls per turn: the second turn's call has the first's ref."""
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if len(results) < 2:
            name, args = ("list_files", {}) if results else ("delete_files", {"paths": ["/a"]})
            call = Part.from_tool_request(name=name, input=args, ref="c1")
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="renumbering", fn=reuses_its_refs)
    define_delete_files(ai, [])

    @ai.tool()
    async def list_files() -> str:
        """List files."""
        return "3 files left"

    agent = GenkitAgent(
        ai,
        model="renumbering",
        tools=["delete_files", "list_files"],
        session_store=storage.sessions,
    )
    [asked] = (await agent.invoke("clean up", thread_id="thread_refs")).interrupts
    done = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_refs")
    assert done.message == "done: 3 files left"


async def test_a_second_approval_of_a_call_ref_used_again_is_asked_under_an_id_of_its_own(
    storage: Storage,
) -> None:
    """Records are filed under the interrupt's id: under the first one's, the second
    approval would be taken for the decided one and never posted."""
    ai = Genkit()
    deleted: list[list[str]] = []

    async def deletes_twice(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Numbers its tool calls per turn: both turns call ``delete_files`` as ``c1``."""
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if len(results) < 2:
            args = {"paths": ["/b" if results else "/a"]}
            call = Part.from_tool_request(name="delete_files", input=args, ref="c1")
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="twice", fn=deletes_twice)
    define_delete_files(ai, deleted)
    agent = GenkitAgent(ai, model="twice", tools=["delete_files"], session_store=storage.sessions)
    [first] = (await agent.invoke("clean up", thread_id="thread_twice")).interrupts
    again = await agent.invoke({first.id: Decision.approve()}, thread_id="thread_twice")
    [second] = again.interrupts
    assert second.tool_call is not None and second.tool_call.args == {"paths": ["/b"]}
    assert second.id != first.id
    done = await agent.invoke({second.id: Decision.approve()}, thread_id="thread_twice")
    assert done.message == "done: deleted 1"
    assert deleted == [["/a"], ["/b"]]


async def test_a_withdrawn_generation_takes_a_new_prompt_with_each_call_answered(
    storage: Storage,
) -> None:
    """Model APIs refuse a history whose tool call has no response (as OpenAI's and
    Gemini's do): the withdrawn call must be answered, with why, before the next prompt."""
    ai = Genkit()
    seen: list[str] = []

    async def strict(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Refuses a call left unanswered; asks to delete once, then reports what it saw."""
        for asked, after in zip(request.messages, [*request.messages[1:], None], strict=True):
            calls = {p.tool_request.ref for p in asked.content if p.tool_request}
            answered = {
                p.tool_response.ref for p in (after.content if after else ()) if p.tool_response
            }
            if calls - answered:
                raise ValueError(f"tool calls {sorted(calls - answered)} have no response")
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(name="delete_files", input={"paths": ["/a"]}, ref="c1")
            return ModelResponse(message=Message(role="model", content=[call]))
        seen.append(str(results[-1].output))
        return ModelResponse(message=Message(role="model", content=[Part(text="ok")]))

    ai.define_model(name="strict", fn=strict)
    deleted: list[list[str]] = []
    define_delete_files(ai, deleted)
    agent = GenkitAgent(ai, model="strict", tools=["delete_files"], session_store=storage.sessions)
    await agent.invoke("clean up", thread_id="thread_withdrawn")
    assert await agent.cancel("thread_withdrawn", "withdrawn by Carol") is not None
    again = await agent.invoke("anything else?", thread_id="thread_withdrawn")
    assert again.message == "ok"
    assert seen == ["withdrawn by Carol"] and deleted == []


async def test_answers_on_a_thread_never_run_are_refused_clearly(storage: Storage) -> None:
    agent = genkit_spec([]).build(storage.sessions)
    with pytest.raises(ResumeError, match="has no open interrupts"):
        await agent.invoke({"gk_c1": Decision.approve()}, thread_id="thread_never")


async def test_what_an_approved_genkit_call_did_is_told_and_audited(make_bot: Any) -> None:
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted))
    value = await bot.start(requested_by=CAROL)
    await bot.decide("edit", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done: deleted 1")
    assert bot.thread().count("delete_files: deleted 1") == 1
    trail = await bot.services.storage.audit.read(count=100)
    [told] = [e for e in trail if e.event == "tool_ran"]
    assert told.record_id == bot.record_id(value) and told.detail == "delete_files: deleted 1"


def twin_calls_spec(deleted: list[list[str]], seen: list[str]) -> AgentSpec:
    """Asks to delete /tmp/a (ref ``c1``); once that is answered, asks to delete /x and /y
    in one turn, both without a ref; once those are answered, notes what they got."""
    ai = Genkit()

    async def twins(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a"]}, ref="c1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        if len(results) == 1:
            twins = [
                Part.from_tool_request(name="delete_files", input={"paths": [path]})
                for path in ("/x", "/y")
            ]
            return ModelResponse(message=Message(role="model", content=twins))
        seen.extend(str(r.output) for r in results[1:])
        return ModelResponse(message=Message(role="model", content=[Part(text="ok")]))

    ai.define_model(name="twins", fn=twins)
    define_delete_files(ai, deleted)
    return AgentSpec(
        name="gk-twins",
        build=lambda sessions: GenkitAgent(
            ai, model="twins", tools=["delete_files"], session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


async def test_two_calls_of_one_tool_without_a_ref_are_refused_not_decided_as_one(
    make_bot: Any,
) -> None:
    """Genkit resumes a call by its tool's name and ref: two ref-less calls of one tool
    would take one decision (restarting one runs both, with its input). The run stops
    saying so; neither call runs, and the call approved before is still told."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=twin_calls_spec(deleted, []))
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    final = await bot.finished()
    assert final.startswith("Stopped (error): ")
    assert "delete_files" in final and "ref" in final and "did not run" in final
    assert deleted == [["/tmp/a"]]
    assert bot.thread().count("delete_files: deleted 1") == 1
    assert len([p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]) == 1


async def test_a_thread_whose_twin_calls_were_refused_takes_a_new_prompt(storage: Storage) -> None:
    """Each refused call is answered with why, so the model gets a well formed history."""
    deleted: list[list[str]] = []
    seen: list[str] = []
    agent = twin_calls_spec(deleted, seen).build(storage.sessions)
    [asked] = (await agent.invoke("clean up", thread_id="thread_twins")).interrupts
    refused = await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_twins")
    assert refused.stop_reason == "error" and not refused.interrupts
    again = await agent.invoke("anything else?", thread_id="thread_twins")
    assert again.message == "ok"
    assert len(seen) == 2 and all("did not run" in s for s in seen)
    assert deleted == [["/tmp/a"]]


async def test_two_interrupted_calls_under_one_ref_are_refused_not_carded_as_one(
    storage: Storage,
) -> None:
    """A model giving two tools' calls one ref: each would be carded under that ref, so
    one card would stand for both; the turn is refused and neither runs."""
    ai, deleted, wiped = Genkit(), [], []

    async def one_ref(request: ModelRequest, ctx: Any) -> ModelResponse:
        if any(p.tool_response for m in request.messages for p in m.content):
            return ModelResponse(message=Message(role="model", content=[Part(text="ok")]))
        calls = [
            Part.from_tool_request(name="delete_files", input={"paths": ["/x"]}, ref="c1"),
            Part.from_tool_request(name="wipe_disk", input={"paths": ["/"]}, ref="c1"),
        ]
        return ModelResponse(message=Message(role="model", content=calls))

    ai.define_model(name="one_ref", fn=one_ref)
    define_delete_files(ai, deleted)

    @ai.tool()
    async def wipe_disk(input: Paths, ctx: ToolRunContext) -> str:
        """Wipe the disk, once a person approves."""
        if not ctx.is_resumed():
            raise Interrupt({"message": "Wipe the disk?"})
        wiped.append(True)
        return "wiped"

    agent = GenkitAgent(
        ai, model="one_ref", tools=["delete_files", "wipe_disk"], session_store=storage.sessions
    )
    refused = await agent.invoke("clean up", thread_id="thread_one_ref")
    assert refused.stop_reason == "error" and not refused.interrupts
    assert "delete_files, wipe_disk" in refused.message
    assert (await agent.invoke("anything else?", thread_id="thread_one_ref")).message == "ok"
    assert deleted == [] and wiped == []


async def test_an_agui_app_hears_a_refused_turn_as_a_run_error(storage: Storage) -> None:
    agent = twin_calls_spec([], []).build(storage.sessions)
    start = {"threadId": "thread_agui_twins", "tools": [], "context": [], "state": {}}
    prompt = {"id": "m1", "role": "user", "content": "clean up"}
    asked = [e async for e in run_agui(agent, start | {"runId": "r1", "messages": [prompt]})]
    [interrupt] = asked[-1]["outcome"]["interrupts"]
    answer = {"interruptId": interrupt["id"], "status": "resolved", "payload": {"type": "approve"}}
    ended = [e async for e in run_agui(agent, start | {"runId": "r2", "resume": [answer]})]
    assert ended[-1]["type"] == "RUN_ERROR" and "did not run" in ended[-1]["message"]


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_genkit_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the generation was saved, as it told what the approved call
    did (before, or after, telling it): the retried job tells it, once, and the run's end."""
    deleted: list[list[str]] = []
    bot: Harness = await make_bot(spec=genkit_spec(deleted), reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done: deleted 2")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]
