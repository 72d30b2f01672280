"""What a person answered is what the run does: an explicit denial outranks a trust given
in the same resume, the latest edit of a call is the one it runs with (an empty one too),
a cancelled question is not an answer, an interrupt asked again keeps when it was first
asked, a tool's result that JSON cannot hold does not break its checkpoint, and a hook's
retry of a tool is a later attempt."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel

from agent_runtime import (
    AfterToolCall,
    Agent,
    Decision,
    InMemorySessionStore,
    ScriptedModel,
    ToolCall,
    ToolContext,
    Workflow,
    interrupt_tool,
    tool,
)
from agent_runtime.agui import run_agui
from agent_runtime.interrupts import Remember
from agent_runtime.run_events import ToolCallFinished
from agent_runtime.workflow import NodeContext


def deleter(runs: list[str]) -> Any:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        runs.append(",".join(paths))
        return f"deleted {len(paths)} file(s)"

    return delete_files


def two_deletions(runs: list[str], first: str, second: str) -> Agent:
    """An agent whose one turn asks to delete ``first`` (call c1) and ``second`` (c2),
    each call guarded by an approval; what ran is appended to ``runs``."""
    turn = [
        ToolCall(id="c1", name="delete_files", args={"paths": [first]}),
        ToolCall(id="c2", name="delete_files", args={"paths": [second]}),
    ]
    return Agent(
        model=ScriptedModel([turn, "done"]),
        tools=[deleter(runs)],
        interrupt_on={"delete_files": True},
    )


async def test_a_rejection_answered_in_the_same_resume_as_a_remembered_approval_is_honoured() -> (
    None
):
    """Two gated calls in one batch, answered in one resume: the first approved with
    "trust for this run", the second explicitly rejected. The rejected call must not run."""
    runs: list[str] = []
    agent = two_deletions(runs, "/tmp/a", "/etc/passwd")
    first = await agent.invoke("clean", thread_id="t")
    assert first.stop_reason == "interrupt"
    by_call = {i.tool_call.id: i.id for i in first.interrupts}
    final = await agent.invoke(
        {
            by_call["c1"]: Decision.approve(remember=Remember(scope="run")),
            by_call["c2"]: Decision.reject("never touch /etc"),
        },
        thread_id="t",
    )
    assert final.stop_reason == "end_turn"
    assert runs == ["/tmp/a"]  # the rejected /etc/passwd call must never run


async def test_a_rejection_given_after_a_later_call_was_trusted_is_honoured() -> None:
    """The same across two resumes: approve c2 with remember=run, then reject c1."""
    runs: list[str] = []
    agent = two_deletions(runs, "/etc/passwd", "/tmp/a")
    first = await agent.invoke("clean", thread_id="t")
    by_call = {i.tool_call.id: i.id for i in first.interrupts}
    second = await agent.invoke(
        {by_call["c2"]: Decision.approve(remember=Remember(scope="run"))}, thread_id="t"
    )
    assert second.stop_reason == "interrupt"
    assert [i.id for i in second.interrupts] == [by_call["c1"]]
    final = await agent.invoke({by_call["c1"]: Decision.reject("no")}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert runs == ["/tmp/a"]  # the call a person rejected must not run


async def test_a_tools_own_interrupt_edited_to_empty_arguments_runs_with_them() -> None:
    """An edit of a tool's own interrupt restarts the tool with the edited arguments,
    even when they are ``{}`` (every parameter at its default)."""
    seen: list[dict] = []

    @tool
    def search(context: ToolContext, query: str = "", limit: int = 10) -> str:
        """Search."""
        seen.append({"query": query, "limit": limit, "original": context.original_input})
        if context.original_input is None:
            context.interrupt("confirm", {"query": query})
        return "ok"

    agent = Agent(
        model=ScriptedModel([[ToolCall(id="c1", name="search", args={"query": "secret"})], "done"]),
        tools=[search],
    )
    first = await agent.invoke("go", thread_id="t")
    [question] = first.interrupts
    final = await agent.invoke({question.id: Decision.edit({})}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert seen[-1]["query"] == ""  # edited to the defaults, not the original "secret"


async def test_a_tools_own_interrupt_edit_is_not_overwritten_by_an_earlier_approval_edit() -> None:
    """A gated tool whose approval was edited (args A1) then asks its own question, which is
    edited again (A2): the tool must run with A2, the last edit a person made."""
    ran: list[list[str]] = []

    @tool
    def delete_files(paths: list[str], context: ToolContext) -> str:
        """Delete the given files."""
        answer = context.interrupt("confirm", {"paths": paths})
        ran.append(paths)
        return f"deleted {paths} ({answer.type})"

    agent = Agent(
        model=ScriptedModel(
            [[ToolCall(id="c1", name="delete_files", args={"paths": ["/a", "/b"]})], "done"]
        ),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
    )
    first = await agent.invoke("clean", thread_id="t")
    [approval] = first.interrupts
    second = await agent.invoke({approval.id: Decision.edit({"paths": ["/a"]})}, thread_id="t")
    [confirm] = second.interrupts
    assert confirm.name == "confirm" and confirm.reason == {"paths": ["/a"]}
    final = await agent.invoke({confirm.id: Decision.edit({"paths": ["/z"]})}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert ran == [["/z"]]  # the person's last edit


async def test_a_tools_own_interrupt_may_not_take_the_approval_policys_name() -> None:
    """The same name at the same call would be the same interrupt: the policy's approval
    would answer the tool's own question. It is refused, saying why."""
    asked: list[object] = []

    @tool
    def deploy(env: str, context: ToolContext) -> str:
        """Deploy."""
        asked.append(context.interrupt("approval", {"really": env}))
        return "deployed"

    agent = Agent(
        model=ScriptedModel([[ToolCall(id="c1", name="deploy", args={"env": "prod"})], "done"]),
        tools=[deploy],
        interrupt_on={"deploy": True},
    )
    first = await agent.invoke("ship", thread_id="t")
    [policy] = first.interrupts
    finished = [
        e
        async for e in agent.stream({policy.id: Decision.approve()}, thread_id="t")
        if isinstance(e, ToolCallFinished)
    ]
    assert asked == []
    [refused] = finished
    assert refused.result.is_error and "'approval' is taken by a hook" in refused.result.as_text()


async def test_a_tool_returning_a_datetime_beside_an_interrupt_leaves_a_resumable_thread() -> None:
    """A tool result that is not JSON (a datetime) in a batch that also stops for a human:
    the checkpoint must still be written, and the tool must not run again."""
    runs: list[str] = []

    @tool
    def stamp() -> dict:
        """Record a timestamp."""
        runs.append("stamp")
        return {"at": datetime(2025, 1, 1, tzinfo=UTC)}

    @tool
    def purge(context: ToolContext) -> str:
        """Purge after confirmation."""
        context.interrupt("confirm")
        runs.append("purge")
        return "purged"

    store = InMemorySessionStore()
    agent = Agent(
        model=ScriptedModel(
            [[ToolCall(id="c1", name="stamp"), ToolCall(id="c2", name="purge")], "done"]
        ),
        tools=[stamp, purge],
        session_store=store,
    )
    first = await agent.invoke("go", thread_id="t")  # its checkpoint holds the result
    assert first.stop_reason == "interrupt"
    assert runs == ["stamp"]


async def test_an_agui_cancelled_question_is_not_given_to_the_model_as_an_answer() -> None:
    """AG-UI ``status: "cancelled"`` declines; for a question the model must be told it was
    not answered (interrupt_tool's promise), not handed the payload as the answer."""

    class Region(BaseModel):
        question: str
        options: list[str]

    ask = interrupt_tool("ask_region", Region, "Ask a person which region to deploy to.")
    model = ScriptedModel(
        [
            [
                ToolCall(
                    id="c1", name="ask_region", args={"question": "Where?", "options": ["eu", "us"]}
                )
            ],
            "deploying",
        ]
    )
    agent = Agent(model=model, tools=[ask])
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "m", "role": "user", "content": "go"}],
    }
    events = [e async for e in run_agui(agent, body)]
    [interrupt] = events[-1]["outcome"]["interrupts"]
    cancel = {"interruptId": interrupt["id"], "status": "cancelled", "payload": "us"}
    events = [
        e async for e in run_agui(agent, {"threadId": "t1", "runId": "r2", "resume": [cancel]})
    ]
    told = next(m.content for m in model.requests[-1].messages if m.role == "tool")
    assert told != "us", "the model was told the person chose 'us' though they cancelled"


async def test_an_interrupt_still_open_after_a_partial_resume_keeps_when_it_was_asked() -> None:
    """Expiry counts from ``created_at`` (bot/api/agui.py ``_expiry``); an interrupt left
    open by a resume that answered its neighbour must not be re-dated, or every partial
    resume extends its deadline."""
    runs: list[str] = []
    agent = two_deletions(runs, "/a", "/b")
    first = await agent.invoke("clean", thread_id="t")
    asked = {i.tool_call.id: i for i in first.interrupts}
    await agent.invoke({asked["c1"].id: Decision.approve()}, thread_id="t")
    [still_open] = await agent.open_interrupts("t")
    assert still_open.id == asked["c2"].id
    assert still_open.created_at == asked["c2"].created_at, (
        f"re-dated from {asked['c2'].created_at.isoformat()} to {still_open.created_at.isoformat()}"
    )


async def test_a_hook_retry_of_a_failed_tool_starts_it_as_a_later_attempt() -> None:
    """README: ``context.attempt`` is above 1 when an earlier attempt may have done the
    work. An AfterToolCall retry after the tool failed mid-way is such a start."""
    attempts: list[int] = []

    @tool
    def charge(amount: int, context: ToolContext) -> str:
        """Charge a card."""
        attempts.append(context.attempt)
        if len(attempts) == 1:
            raise TimeoutError("gateway timed out after charging")  # the work may be done
        return "charged"

    def retry_once(event: AfterToolCall) -> None:
        if event.exception is not None and len(attempts) == 1:
            event.retry = True

    agent = Agent(
        model=ScriptedModel([[ToolCall(id="c1", name="charge", args={"amount": 5})], "done"]),
        tools=[charge],
        hooks=[retry_once],
    )
    result = await agent.invoke("pay", thread_id="t")
    assert result.stop_reason == "end_turn"
    assert attempts == [1, 2]


async def test_a_workflow_nodes_own_edit_is_not_overwritten_by_its_approval_edit() -> None:
    """The same in a workflow: the approval of node ``delete`` is edited, then the node's
    own question is edited again; the node must run with the last edit."""
    ran: list[object] = []

    async def plan(context: NodeContext) -> dict:
        return {"paths": ["/a", "/b"]}

    async def delete(context: NodeContext) -> str:
        context.interrupt("confirm", context.input)
        ran.append(context.input)
        return "deleted"

    flow = Workflow(nodes={"plan": plan, "delete": delete}, interrupt_before={"delete": True})
    first = await flow.invoke("go", thread_id="w")
    [approval] = first.interrupts
    second = await flow.invoke({approval.id: Decision.edit({"paths": ["/a"]})}, thread_id="w")
    [confirm] = second.interrupts
    final = await flow.invoke({confirm.id: Decision.edit({"paths": ["/z"]})}, thread_id="w")
    assert final.stop_reason == "end_turn"
    assert ran == [{"paths": ["/z"]}]
