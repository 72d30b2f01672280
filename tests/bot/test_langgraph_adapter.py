"""A real LangGraph graph (SQLite checkpointer, offline) as a Signoff agent: its interrupts
are cards, and each decision made through the real Bolt app over signed HTTP resumes the
graph with LangChain's decision shapes; another bot process can do the resuming; and a
real LangChain agent's HumanInTheLoopMiddleware batch is a card per tool call."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Annotated, Any, Literal, TypedDict

import pytest
from adapter_checks import first_telling_dies, interrupts_keep_their_time, tool_audits
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pydantic import BaseModel, Field, TypeAdapter
from strands_agents import gated_spec

from agent_runtime import Decision
from agent_runtime.errors import ResumeError, ThreadBusyError
from agent_runtime.run_events import RunFinished, ToolCallFinished
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent
from signoff.langgraph_interrupts import allowed_decisions
from storage import Storage


class Cleanup(TypedDict, total=False):
    request: str
    paths: list[str]
    region: str
    result: str


def cleanup_graph(ran: list[dict[str, Any]]) -> StateGraph:
    """plan -> ask which region (a question) -> delete (a tool approval) -> done."""

    def plan(state: Cleanup) -> Cleanup:
        return {"paths": ["/tmp/a", "/tmp/b"]}

    def pick_region(state: Cleanup) -> Cleanup:
        return {"region": str(interrupt("Which region?"))}

    def delete(state: Cleanup) -> Cleanup:
        decision = interrupt(
            {
                "type": "tool_approval",
                "tool_call_id": "call_delete",
                "name": "delete_files",
                "args": {"paths": state["paths"]},
                "description": f"Delete {len(state['paths'])} files in {state['region']}",
            }
        )
        if decision["type"] == "approve":
            args = {"paths": state["paths"]}
        elif decision["type"] == "edit":
            args = decision["edited_action"]["args"]
        else:
            return {"result": f"not deleted ({decision['type']}): {decision.get('message', '')}"}
        ran.append(args)
        return {"result": f"deleted {len(args['paths'])} in {state['region']}"}

    graph = StateGraph(Cleanup)
    graph.add_node("plan", plan)
    graph.add_node("pick_region", pick_region)
    graph.add_node("delete", delete)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "pick_region")
    graph.add_edge("pick_region", "delete")
    graph.add_edge("delete", END)
    return graph


@pytest.fixture
async def saver(tmp_path: Path) -> AsyncIterator[AsyncSqliteSaver]:
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "graph.sqlite")) as checkpoints:
        yield checkpoints


def spec(ran: list[dict[str, Any]], saver: AsyncSqliteSaver) -> AgentSpec:
    compiled = cleanup_graph(ran).compile(checkpointer=saver)
    return AgentSpec(
        name="lg-cleanup",
        build=lambda sessions: LangGraphAgent(
            compiled, input=lambda text: {"request": text}, session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )


async def _answer_region(bot: Harness, value: str) -> str:
    """Answer the question card; the value of the approval card that follows."""
    status, body = await bot.submit(ids.REPLY_VIEW, value, user=ALICE, text="eu-west")
    assert status == 200 and "errors" not in body, body
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the approval card")
    return str(_cards(bot)[1]["blocks"][-1]["elements"][0]["value"])


def _cards(bot: Harness) -> list[dict[str, Any]]:
    return [p for p in bot.slack.called("chat.postMessage") if p.get("blocks")]


def _approval_ts(bot: Harness) -> str:
    """The approval card's message ts (it is posted in the question's thread)."""
    posts = bot.slack.called("chat.postMessage")
    answers = bot.slack.answers("chat.postMessage")
    [ts] = [
        str(a["ts"])
        for p, a in zip(posts, answers, strict=True)
        if "delete_files" in str(p.get("blocks"))
    ]
    return ts


@pytest.mark.parametrize(
    ("how", "ran", "ends_with"),
    [
        ("approve", [{"paths": ["/tmp/a", "/tmp/b"]}], "deleted 2 in eu-west"),
        ("edit", [{"paths": ["/tmp/a"]}], "deleted 1 in eu-west"),
        ("reject", [], "not deleted (reject): not today"),
        ("respond", [], "not deleted (respond): done by hand"),
    ],
)
async def test_each_decision_resumes_the_graph_as_it_says(
    make_bot: Any,
    saver: AsyncSqliteSaver,
    how: str,
    ran: list[dict[str, Any]],
    ends_with: str,
) -> None:
    calls: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=spec(calls, saver))
    value = await bot.start(requested_by=CAROL)
    question = _cards(bot)[0]
    assert question["blocks"][0]["text"]["text"] == "Question: question"
    assert "Which region?" in str(question["blocks"])

    approval_value = await _answer_region(bot, value)
    approval = _cards(bot)[1]
    assert approval["blocks"][0]["text"]["text"] == "Approval needed: delete_files"
    assert "Delete 2 files in eu-west" in str(approval["blocks"]) and "/tmp/b" in str(approval)

    await bot.decide(how, approval_value, user=ALICE, message_ts=_approval_ts(bot))
    final = await bot.finished()
    assert final.startswith(f"Finished: {ends_with}")
    assert calls == ran


async def test_another_bot_process_resumes_the_graph(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    calls: list[dict[str, Any]] = []
    first: Harness = await make_bot(spec=spec(calls, saver))
    value = await first.start(requested_by=CAROL)
    await first.loops.stop()  # its resume worker is gone: another process must resume
    second: Harness = await make_bot(spec=spec(calls, saver))
    approval_value = await _answer_region(second, value)
    await second.click(ids.APPROVE, approval_value, user=ALICE, message_ts=_approval_ts(second))
    assert (await second.finished()).startswith("Finished: deleted 2 in eu-west")
    assert calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_withdrawing_the_card_ends_the_graphs_run_and_the_thread_takes_a_new_prompt(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    calls: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=spec(calls, saver))
    value = await bot.start(requested_by=CAROL)
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    await bot.click(ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {record.id}")
    await bot.slack.wait_for(
        lambda: any(t.startswith(f"Withdrawn by <@{CAROL}>: the run was") for t in bot.thread()),
        what="the cancelled run in the thread",
    )
    agent = bot.services.registry.agent("lg-cleanup")
    status = await agent.thread_status(record.thread_id)
    assert status is not None and status.status == "idle" and status.interrupts == ()
    again = await agent.invoke("clean again", thread_id=record.thread_id)
    assert [i.reason for i in again.interrupts] == ["Which region?"]  # a new run, from START
    assert calls == []


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's own fake chat model, scripted; tools are bound by the script itself."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self


async def test_langchains_hitl_middleware_batch_is_a_card_per_call_decided_one_by_one(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/var/keep"]}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    graph = create_agent(
        model,
        tools=[delete_files],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"delete_files": True})],
        checkpointer=saver,
    )
    agent_spec = AgentSpec(
        name="lc-cleanup",
        build=lambda sessions: LangGraphAgent(
            graph,
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="a card per tool call")
    first, second = _cards(bot)
    assert "/tmp/b" in str(first["blocks"]) and "/var/keep" in str(second["blocks"])
    answers = bot.slack.answers("chat.postMessage")
    ts = [
        str(a["ts"])
        for p, a in zip(bot.slack.called("chat.postMessage"), answers, strict=True)
        if p.get("blocks")
    ]

    # One answer leaves the graph waiting; the second resumes it with both, in order.
    await bot.click(
        ids.APPROVE, first["blocks"][-1]["elements"][0]["value"], user=ALICE, message_ts=ts[0]
    )
    await bot.slack.wait_calls("chat.update")
    assert deleted == []
    deny = second["blocks"][-1]["elements"][0]["value"]
    status, body = await bot.submit(ids.DENY_VIEW, deny, user=ALICE, text="keep that one")
    assert status == 200 and "errors" not in body
    final = await bot.finished()
    assert final.startswith("Finished: all done")
    assert deleted == [["/tmp/a", "/tmp/b"]]


async def test_two_concurrent_resumes_run_the_tool_once_with_the_lease_and_twice_without(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    """Measured on the real graph: LangGraph alone lets two resumes of one thread both run
    the tool; through the adapter (the thread's lease in Redis) exactly one does."""
    changed, release = asyncio.Event(), asyncio.Event()
    ran: list[str] = []
    inside = 0

    async def slow_delete(state: Cleanup) -> Cleanup:
        decision = interrupt(
            {
                "type": "tool_approval",
                "tool_call_id": "c1",
                "name": "delete_files",
                "args": {"paths": ["/tmp/a"]},
            }
        )
        nonlocal inside
        inside += 1
        changed.set()
        await release.wait()  # both resumes are in the step at once, if nothing stops them
        ran.append(decision["type"])
        return {"result": "deleted"}

    builder = StateGraph(Cleanup)
    builder.add_node("delete", slow_delete)
    builder.add_edge(START, "delete")
    builder.add_edge("delete", END)
    graph = builder.compile(checkpointer=saver)

    async def two_at_once(resume: Any) -> list[Any]:
        """Release the step once both resumes are inside it, or one was refused."""
        tasks = [asyncio.create_task(resume()), asyncio.create_task(resume())]
        for task in tasks:
            task.add_done_callback(lambda _: changed.set())
        while inside < 2 and not any(t.done() for t in tasks):
            await asyncio.wait_for(changed.wait(), 10)
            changed.clear()
        release.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    # LangGraph alone: both resumes of the same interrupt run the tool.
    bare = {"configurable": {"thread_id": "thread_bare"}}
    await graph.ainvoke({"request": "x"}, bare)
    [pending] = (await graph.aget_state(bare)).tasks[0].interrupts
    command = Command(resume={pending.id: {"type": "approve"}})
    await two_at_once(lambda: graph.ainvoke(command, bare))
    assert ran == ["approve", "approve"]

    # Through the adapter, the thread's lease lets one resume run; the other is refused.
    ran.clear()
    inside = 0
    changed.clear()
    release.clear()
    agent = LangGraphAgent(
        graph, input=lambda text: {"request": text}, session_store=storage.sessions
    )
    first = await agent.invoke("x", thread_id="thread_leased")
    [asked] = first.interrupts
    answer = {asked.id: Decision.approve()}
    results = await two_at_once(lambda: agent.invoke(answer, thread_id="thread_leased"))
    assert ran == ["approve"]
    refused = [r for r in results if isinstance(r, Exception)]
    assert len(refused) == 1 and isinstance(refused[0], ThreadBusyError)


def test_a_tagged_union_response_schema_offers_only_its_decisions() -> None:
    """LangGraph publishes ``TypeAdapter(...).json_schema()`` of a tagged union: the card
    must offer only its tags, never a decision the graph would refuse on resume."""

    class Approve(BaseModel):
        type: Literal["approve"]

    class Reject(BaseModel):
        type: Literal["reject"]
        message: str | None = None

    tagged = Annotated[Approve | Reject, Field(discriminator="type")]
    assert allowed_decisions(TypeAdapter(tagged).json_schema()) == ("approve", "reject")
    assert allowed_decisions(TypeAdapter(Approve | Reject).json_schema()) == ("approve", "reject")
    assert allowed_decisions(Approve.model_json_schema()) == ("approve",)


async def test_an_interrupt_keeps_the_time_it_was_asked_so_its_expiry_does_not_move(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    await interrupts_keep_their_time(spec([], saver).build(storage.sessions))


class TwoQuestions(TypedDict, total=False):
    request: str
    result: str


def _asks_twice(state: TwoQuestions) -> TwoQuestions:
    first = interrupt({"type": "tool_approval", "tool_call_id": "c1", "name": "drain", "args": {}})
    second = interrupt({"type": "tool_approval", "tool_call_id": "c2", "name": "drop", "args": {}})
    return {"result": f"{first} {second}"}


def _two_questions() -> LangGraphAgent:
    builder = StateGraph(TwoQuestions)
    builder.add_node("n", _asks_twice)
    builder.add_edge(START, "n")
    builder.add_edge("n", END)
    return LangGraphAgent(
        builder.compile(checkpointer=InMemorySaver()), input=lambda t: {"request": t}
    )


async def test_a_nodes_second_question_is_dated_when_it_is_asked() -> None:
    """Its expiry counts from then: resuming part of a node writes no checkpoint, whose
    time is when the first question was asked."""
    agent = _two_questions()
    [first] = (await agent.invoke("go", thread_id="thread_two")).interrupts
    [second] = (
        await agent.invoke({first.id: Decision.approve()}, thread_id="thread_two")
    ).interrupts
    assert second.tool_call is not None and second.tool_call.name == "drop"
    assert second.created_at > first.created_at


async def test_a_prompt_while_the_graph_waits_for_a_person_is_refused() -> None:
    agent = _two_questions()
    [first] = (await agent.invoke("go", thread_id="thread_p")).interrupts
    with pytest.raises(ResumeError, match="waits for its open interrupts"):
        await agent.invoke("something else", thread_id="thread_p")
    status = await agent.thread_status("thread_p")
    assert status is not None and [i.id for i in status.interrupts] == [first.id]


async def test_a_resume_retried_after_one_of_its_calls_failed_runs_the_others_once(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    """LangChain's per-call approvals run each call as a task of its own: when one fails,
    LangGraph keeps the ones that finished, and the retried resume (the worker's) must
    go on with the call left, not be refused for the answer already applied."""
    deleted: list[list[str]] = []
    busy = [True]

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        if paths == ["/var/x"] and busy:
            busy.clear()
            raise RuntimeError("disk busy")
        deleted.append(paths)
        return f"deleted {len(paths)}"

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/var/x"]}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode="per_call")
    agent = LangGraphAgent(
        create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
        input=lambda text: {"messages": [{"role": "user", "content": text}]},
        output=lambda values: str(values["messages"][-1].content),
        session_store=storage.sessions,
    )
    asked = (await agent.invoke("clean up", thread_id="thread_half")).interrupts
    answers = {i.id: Decision.approve() for i in asked}
    with pytest.raises(RuntimeError, match="disk busy"):
        await agent.invoke(answers, thread_id="thread_half")
    assert deleted == [["/tmp/a"]]

    done = await agent.invoke(answers, thread_id="thread_half")  # the worker's retry
    assert done.message == "all done"
    assert deleted == [["/tmp/a"], ["/var/x"]]
    status = await agent.thread_status("thread_half")
    assert status is not None and status.last_result is not None
    assert status.last_result.message == "all done"  # what a worker catching up tells
    with pytest.raises(ResumeError, match="unknown interrupt id"):
        await agent.invoke({"lg_nonsense": Decision.approve()}, thread_id="thread_half")


async def test_a_thread_another_agent_keeps_is_refused_and_left_as_it_was(
    storage: Storage,
) -> None:
    """An AG-UI app chooses its thread ids and may use one with two agents: a run of the
    graph there must not save over the Strands agent's interrupted state."""
    deleted: list[list[str]] = []
    strands = gated_spec(deleted).build(storage.sessions)
    graph = LangGraphAgent(
        cleanup_graph([]).compile(checkpointer=InMemorySaver()),
        input=lambda text: {"request": text},
        session_store=storage.sessions,
    )
    [asked] = (await strands.invoke("clean up", thread_id="conversation-1")).interrupts
    with pytest.raises(ResumeError, match="another agent's"):
        await graph.invoke("plan", thread_id="conversation-1")
    assert await graph.thread_status("conversation-1") is None
    done = await strands.invoke({asked.id: Decision.approve()}, thread_id="conversation-1")
    assert done.message == "done (success): deleted 2"
    assert deleted == [["/tmp/a", "/tmp/b"]]
    with pytest.raises(ResumeError, match="another agent's"):
        await graph.invoke("plan", thread_id="conversation-1")


def _gated_chat_agent(
    model: ScriptedChatModel,
    mode: Literal["batched", "per_call"],
    saver: AsyncSqliteSaver,
    sessions: SessionStore,
    deleted: list[list[str]],
) -> LangGraphAgent:
    """A LangChain agent of ``model`` whose ``delete_files`` (noting its paths in
    ``deleted``) waits for a human, in ``mode``."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode=mode)
    return LangGraphAgent(
        create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
        input=lambda text: {"messages": [{"role": "user", "content": text}]},
        output=lambda values: str(values["messages"][-1].content),
        session_store=sessions,
    )


class StrictChatModel(ScriptedChatModel):
    """Refuses a history with a tool call that has no response, as model APIs do."""

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
        calls = [c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls]
        unanswered = [c["id"] for c in calls if c["id"] not in answered]
        if unanswered:
            raise ValueError(f"tool calls {unanswered} have no response")
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_withdrawn_langchain_agent_takes_a_new_prompt(
    storage: Storage, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    deleted: list[list[str]] = []

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = StrictChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="what now?")])
    )
    agent = _gated_chat_agent(model, mode, saver, storage.sessions, deleted)
    [asked] = (await agent.invoke("clean up", thread_id="thread_withdrawn")).interrupts
    assert await agent.cancel("thread_withdrawn", "withdrawn by Carol") is not None
    with pytest.raises(ResumeError, match="unknown interrupt id"):  # not a retry of it
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_withdrawn")
    again = await agent.invoke("anything else?", thread_id="thread_withdrawn")
    assert again.message == "what now?"
    assert deleted == []
    state = await agent.graph.aget_state({"configurable": {"thread_id": "thread_withdrawn"}})
    [answer] = [m for m in state.values["messages"] if isinstance(m, ToolMessage)]
    assert answer.content == "withdrawn by Carol"


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_what_a_langchain_agents_approved_call_did_is_told_and_audited(
    make_bot: Any, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    """The approved call's outcome is in its card's thread and audited (``tool_ran``, tied
    to its card); the denied one did not run, and is not audited as a failure. A batch's
    actions are the model's calls too: each card is tied to the call it approved."""
    deleted: list[list[str]] = []

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/var/keep"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    agent_spec = AgentSpec(
        name="lc-told",
        build=lambda sessions: _gated_chat_agent(model, mode, saver, sessions, deleted),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="a card per tool call")
    first, second = (c["blocks"][-1]["elements"][0]["value"] for c in _cards(bot))
    ts = [str(a["ts"]) for a in bot.slack.answers("chat.postMessage")]
    status, body = await bot.submit(ids.DENY_VIEW, first, user=ALICE, text="keep that one")
    assert status == 200 and "errors" not in body
    await bot.slack.wait_calls("chat.update")
    await bot.click(ids.APPROVE, second, user=ALICE, message_ts=ts[1])

    def said() -> list[dict[str, Any]]:  # anywhere: each of the round's cards has a thread
        return bot.slack.called("chat.postMessage")

    def ended() -> bool:
        return any(str(p.get("text")).startswith("Finished: all done") for p in said())

    await bot.slack.wait_for(ended, what="the run's end")
    assert deleted == [["/tmp/a", "/tmp/b"]]
    told = [p.get("thread_ts") for p in said() if p.get("text") == "delete_files: deleted 2"]
    assert told == [ts[1]]  # in the thread of the card that approved it
    trail = await bot.services.storage.audit.read(count=100)
    audited = [(e.event, e.record_id, e.detail) for e in trail if e.event.startswith("tool_")]
    assert audited == [("tool_ran", bot.record_id(second), "delete_files: deleted 2")]


async def test_a_second_call_under_a_tool_call_id_used_before_is_told_and_audited(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    """A model numbering its calls per turn calls ``c1`` twice, each approved on its card:
    the second run is a tool message of its own, not taken for the first one's."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {paths[0]}"

    def call(path: str) -> AIMessage:
        args = {"paths": [path]}
        return AIMessage(
            content="", tool_calls=[{"id": "c1", "name": "delete_files", "args": args}]
        )

    model = ScriptedChatModel(messages=iter([call("/a"), call("/b"), AIMessage(content="done")]))
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode="per_call")
    agent_spec = AgentSpec(
        name="lc-twice",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec)
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 1, what="the first card")
    first = _cards(bot)[0]["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, first, user=ALICE, message_ts=bot.message_ts(-1))
    await bot.slack.wait_for(lambda: len(_cards(bot)) == 2, what="the second card")
    second = _cards(bot)[1]["blocks"][-1]["elements"][0]["value"]
    posts, answers = bot.slack.called("chat.postMessage"), bot.slack.answers("chat.postMessage")
    [ts] = [str(a["ts"]) for p, a in zip(posts, answers, strict=True) if "/b" in str(p)]
    await bot.click(ids.APPROVE, second, user=ALICE, message_ts=ts)

    def said() -> list[str]:
        return [str(p.get("text")) for p in bot.slack.called("chat.postMessage")]

    await bot.slack.wait_for(
        lambda: any(t.startswith("Finished: done") for t in said()), what="the run's end"
    )
    assert deleted == [["/a"], ["/b"]]
    assert [t for t in said() if t.startswith("delete_files")] == [
        "delete_files: deleted /a",
        "delete_files: deleted /b",
    ]
    trail = await bot.services.storage.audit.read(count=100)
    told = [(e.record_id, e.detail) for e in trail if e.event == "tool_ran"]
    assert told == [
        (bot.record_id(first), "delete_files: deleted /a"),
        (bot.record_id(second), "delete_files: deleted /b"),
    ]


class FailsOnceAfterTheTools(ScriptedChatModel):
    """Its first call after a tool ran fails (the provider is unreachable)."""

    failed: bool = False

    def _generate(self, messages: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.failed and any(isinstance(m, ToolMessage) for m in messages):
            self.failed = True
            raise ConnectionError("the model is unreachable")
        return super()._generate(messages, *args, **kwargs)


@pytest.mark.parametrize("mode", ["batched", "per_call"])
async def test_a_resume_retried_after_the_model_failed_past_the_tool_says_it_ran(
    storage: Storage, saver: AsyncSqliteSaver, mode: Literal["batched", "per_call"]
) -> None:
    """An app (no cards) whose resume failed after the approved tool ran: a retry that
    denies it is told the tool ran, on an approval, and changes nothing; a retry with the
    approval goes on from where the graph failed and tells what the tool did."""
    deleted: list[list[str]] = []

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = FailsOnceAfterTheTools(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    agent = _gated_chat_agent(model, mode, saver, storage.sessions, deleted)
    [asked] = (await agent.invoke("clean up", thread_id="thread_failed")).interrupts
    with pytest.raises(ConnectionError):
        await agent.invoke({asked.id: Decision.approve()}, thread_id="thread_failed")
    assert deleted == [["/tmp/a"]]
    marker = await storage.sessions.load("thread_failed")

    with pytest.raises(ResumeError) as refused:
        await agent.invoke({asked.id: Decision.reject("no")}, thread_id="thread_failed")
    said = f"{asked.id} delete_files: approved or edited, and it ran (deleted 1)"
    assert said in str(refused.value)
    assert await storage.sessions.load("thread_failed") == marker

    events = [
        e async for e in agent.stream({asked.id: Decision.approve()}, thread_id="thread_failed")
    ]
    told = [(e.tool_call.id, e.result.content) for e in events if isinstance(e, ToolCallFinished)]
    assert told == [("c1", "deleted 1")]
    [finished] = [e for e in events if isinstance(e, RunFinished)]
    assert finished.result.message == "all done"
    assert deleted == [["/tmp/a"]]


async def test_what_ran_before_the_model_failed_is_told_when_the_worker_retries(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    """The resume ran the approved tool, then the model failed: the worker's retry goes on
    from there, and what the tool did is posted and audited under its card."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = FailsOnceAfterTheTools(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="all done")])
    )
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True}, interrupt_mode="per_call")
    agent_spec = AgentSpec(
        name="lc-flaky",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec, reclaim_after=0.05)
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: all done")
    assert model.failed and deleted == [["/tmp/a"]]
    assert bot.thread().count("delete_files: deleted 1") == 1
    trail = await bot.services.storage.audit.read(count=100)
    told = [(e.event, e.record_id) for e in trail if e.event.startswith("tool_")]
    assert told == [("tool_ran", bot.record_id(value))]


async def test_a_batch_action_is_tied_to_a_model_call_only_when_that_is_sure(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    """Two like calls, a ``when`` predicate asking about the second only: the action could
    be either, so its card is tied to neither (the one that ran unasked is not told as
    approved on it)."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)}"

    calls = [
        {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}},
        {"id": "c2", "name": "delete_files", "args": {"paths": ["/tmp/a"]}},
    ]
    model = ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=calls)]))
    second_only = {
        "allowed_decisions": ["approve", "reject"],
        "when": lambda request: request.tool_call["id"] == "c2",
    }
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": second_only})
    agent = LangGraphAgent(
        create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
        input=lambda text: {"messages": [{"role": "user", "content": text}]},
        session_store=storage.sessions,
    )
    [asked] = (await agent.invoke("clean up", thread_id="thread_like")).interrupts
    assert asked.tool_call is not None and asked.tool_call.id not in ("c1", "c2")


@pytest.mark.parametrize("after_telling", [False, True])
async def test_what_a_langchain_agents_call_did_is_told_once_when_its_worker_died_telling_it(
    make_bot: Any, saver: AsyncSqliteSaver, monkeypatch: pytest.MonkeyPatch, after_telling: bool
) -> None:
    """The worker died once the graph and its marker were saved, as it told what the
    approved call did (before, or after, telling it): the retried job tells it, once, and
    the run's end."""
    deleted: list[list[str]] = []

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        deleted.append(paths)
        return f"deleted {len(paths)}"

    call = {"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a", "/tmp/b"]}}
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="all done")])
    )
    gate = HumanInTheLoopMiddleware(interrupt_on={"delete_files": True})
    agent_spec = AgentSpec(
        name="lc-died-telling",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=agent_spec, reclaim_after=0.05)
    died = first_telling_dies(monkeypatch, after_telling=after_telling)
    value = await bot.start(requested_by=CAROL)
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: all done")
    assert died == ["died"] and deleted == [["/tmp/a", "/tmp/b"]]
    assert bot.thread().count("delete_files: deleted 2") == 1
    assert await tool_audits(bot) == [(bot.record_id(value), "delete_files: deleted 2")]
