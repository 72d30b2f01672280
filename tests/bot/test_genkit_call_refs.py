"""Genkit resumes an interrupted call by its tool's name and ``ref``: a ref used again is
asked under an id of its own, and calls that would share one decision are refused."""

from __future__ import annotations

from typing import Any

import pytest
from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from genkit_agents import Paths, define_delete_files
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import Decision
from agent_runtime.agui import run_agui
from agent_runtime.errors import ResumeError
from agent_runtime.interrupts import InterruptResponse
from bot.agents.policy import AgentSpec, Policy
from signoff.genkit import GenkitAgent
from storage import Storage


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


async def test_a_resume_answering_one_interrupt_twice_and_another_not_runs_nothing(
    storage: Storage,
) -> None:
    """Genkit must be given an answer for each interrupted call: a resume answering one
    twice and leaving another open is refused before any tool runs, and changes nothing."""
    ai, deleted = Genkit(), []

    async def two_calls(request: ModelRequest, ctx: Any) -> ModelResponse:
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if results:
            return ModelResponse(message=Message(role="model", content=[Part(text="ok")]))
        calls = [
            Part.from_tool_request(name="delete_files", input={"paths": [p]}, ref=ref)
            for p, ref in (("/tmp/a", "c1"), ("/tmp/b", "c2"))
        ]
        return ModelResponse(message=Message(role="model", content=calls))

    ai.define_model(name="two-calls", fn=two_calls)
    define_delete_files(ai, deleted)
    agent = GenkitAgent(
        ai, model="two-calls", tools=["delete_files"], session_store=storage.sessions
    )
    first, _ = (await agent.invoke("clean up", thread_id="thread_twice")).interrupts
    before = await storage.sessions.load("thread_twice")
    twice = [InterruptResponse(interrupt_id=first.id, decision=Decision.approve())] * 2
    with pytest.raises(ResumeError, match="once each"):
        await agent.invoke(twice, thread_id="thread_twice")
    assert deleted == []
    assert await storage.sessions.load("thread_twice") == before
