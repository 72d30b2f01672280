"""A real LangGraph graph (SQLite checkpointer, offline) as a Signoff agent: its interrupts
are cards, and each decision made through the real Bolt app over signed HTTP resumes the
graph with LangChain's decision shapes; another bot process can do the resuming, one at a
time under the thread's lease."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from adapter_checks import interrupts_keep_their_time
from harness import ALICE, CAROL, CHANNEL, Harness
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from langgraph_agents import posted_cards
from strands_agents import gated_spec

from agent_runtime import Decision
from agent_runtime.errors import ResumeError, ThreadBusyError
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent
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
    await bot.slack.wait_for(lambda: len(posted_cards(bot)) == 2, what="the approval card")
    return str(posted_cards(bot)[1]["blocks"][-1]["elements"][0]["value"])


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
    question = posted_cards(bot)[0]
    assert question["blocks"][0]["text"]["text"] == "Question: question"
    assert "Which region?" in str(question["blocks"])

    approval_value = await _answer_region(bot, value)
    approval = posted_cards(bot)[1]
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


async def test_an_interrupt_keeps_the_time_it_was_asked_so_its_expiry_does_not_move(
    storage: Storage, saver: AsyncSqliteSaver
) -> None:
    await interrupts_keep_their_time(spec([], saver).build(storage.sessions))


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
