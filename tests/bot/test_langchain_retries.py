"""A LangChain agent's resume that fails after tools ran is retried from where the graph
failed: the tools do not run again, and a retry that says otherwise is refused."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, gated_chat_agent

from agent_runtime import Decision
from agent_runtime.errors import ResumeError
from agent_runtime.run_events import RunFinished, ToolCallFinished
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent
from storage import Storage


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
    agent = gated_chat_agent(model, mode, saver, storage.sessions, deleted)
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
