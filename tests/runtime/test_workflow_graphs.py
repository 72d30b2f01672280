"""Workflows as graphs: agent nodes, routers, a step limit, failing nodes, and workflows
refused as misconfigured."""

import pytest

from agent_runtime import (
    Agent,
    BeforeNodeCall,
    Decision,
    InMemorySessionStore,
    NodeContext,
    RunFinished,
    ScriptedModel,
    TextMessage,
    ToolCall,
    ToolCallFinished,
    UnresumableError,
    UsageError,
    Workflow,
    tool,
)


async def test_an_agent_node_that_interrupts_pauses_the_workflow_and_resumes_the_agent():
    purged: list[str] = []

    @tool
    async def purge(path: str) -> str:
        """Purge a directory."""
        purged.append(path)
        return f"purged {path}"

    model = ScriptedModel([[ToolCall(name="purge", args={"path": "/var/log"})], "cache purged"])
    agent = Agent(model=model, tools=[purge], interrupt_on={"purge": True})
    reports: list[str] = []

    async def report(ctx: NodeContext) -> str:
        reports.append(ctx.input)
        return f"report: {ctx.input}"

    workflow = Workflow(nodes={"clean": agent, "report": report})
    first = await workflow.invoke("clean /var/log", thread_id="t")
    assert first.stop_reason == "interrupt"
    [approval] = first.interrupts
    assert approval.tool_call is not None and approval.tool_call.name == "purge"
    assert model.requests[0].messages[-1].content == "clean /var/log"
    assert purged == []

    events = [e async for e in workflow.stream({approval.id: Decision.approve()}, thread_id="t")]
    assert purged == ["/var/log"]
    assert reports == ["cache purged"]
    assert len(model.requests) == 2
    assert any(isinstance(e, ToolCallFinished) for e in events)
    assert [e.text for e in events if isinstance(e, TextMessage)] == [
        "cache purged",
        "report: cache purged",
    ]
    finished = events[-1]
    assert isinstance(finished, RunFinished)
    assert finished.result.stop_reason == "end_turn"
    assert finished.result.message == "report: cache purged"


async def test_an_agent_nodes_answers_are_kept_when_a_node_hook_asks_again_before_it():
    """Answers to an agent node's interrupts, given in a resume that a BeforeNodeCall hook
    stopped first (it asks again), reach the agent once the hook is answered: the run
    neither fails nor asks them again."""
    purged: list[str] = []

    @tool
    async def purge(path: str) -> str:
        """Purge a directory."""
        purged.append(path)
        return f"purged {path}"

    model = ScriptedModel([[ToolCall(name="purge", args={"path": "/var/log"})], "cache purged"])
    agent = Agent(model=model, tools=[purge], interrupt_on={"purge": True})
    freeze: list[str] = []

    def change_freeze(event: BeforeNodeCall) -> None:
        if freeze:  # a change freeze began while the agent waited
            event.interrupt("freeze", reason="A change freeze began: go on anyway?")

    workflow = Workflow(nodes={"clean": agent}, hooks=[change_freeze])
    [approval] = (await workflow.invoke("clean /var/log", thread_id="t")).interrupts
    freeze.append("on")
    [asked] = (await workflow.invoke({approval.id: Decision.approve()}, thread_id="t")).interrupts
    assert asked.name == "freeze" and purged == []
    result = await workflow.invoke({asked.id: "go on"}, thread_id="t")
    assert result.stop_reason == "end_turn", result
    assert purged == ["/var/log"]


async def test_a_router_chooses_the_next_node_from_the_output():
    runs: list[str] = []

    async def inspect(ctx: NodeContext) -> list[str]:
        runs.append("inspect")
        return [] if ctx.input == "clean disk" else ["a.log"]

    async def delete(ctx: NodeContext) -> str:
        runs.append("delete")
        return "deleted"

    async def nothing(ctx: NodeContext) -> str:
        runs.append("nothing")
        return "nothing to delete"

    workflow = Workflow(
        nodes={"inspect": inspect, "delete": delete, "nothing": nothing},
        edges={"inspect": lambda files: "delete" if files else "nothing"},
    )
    assert (await workflow.invoke("clean disk")).message == "nothing to delete"
    assert (await workflow.invoke("full disk")).message == "deleted"
    assert runs == ["inspect", "nothing", "inspect", "delete"]


async def test_a_failing_router_ends_the_run_as_an_error_and_its_node_runs_once():
    """A router that raises, or names no node, after its node ran: the run ends as an
    error naming the router, so the node is not run again and the thread takes a new
    prompt (it was left mid-run, and ContinueRun ran the node again into the same fault)."""
    runs: list[str] = []

    async def inspect(ctx: NodeContext) -> dict:
        runs.append(ctx.input)
        return {"count": 2}

    async def delete(ctx: NodeContext) -> str:
        runs.append("delete")
        return "deleted"

    def route(output: dict) -> str:
        return "delete" if output["files"] else "nowhere"

    store = InMemorySessionStore()
    nodes = {"inspect": inspect, "delete": delete}
    workflow = Workflow(nodes=nodes, edges={"inspect": route}, session_store=store)
    failed = await workflow.invoke("first", thread_id="t")
    assert failed.stop_reason == "error"
    assert failed.message == "the router after 'inspect' failed: KeyError: 'files'"
    assert (await workflow.thread_status("t")).status == "idle"
    assert (await workflow.invoke("second", thread_id="t")).stop_reason == "error"
    assert runs == ["first", "second"]

    astray = Workflow(nodes=nodes, edges={"inspect": lambda _: "nowhere"}, session_store=store)
    lost = await astray.invoke("third", thread_id="t")
    assert lost.stop_reason == "error"
    assert lost.message == "the router after 'inspect' chose 'nowhere', which is not a node"
    assert runs == ["first", "second", "third"]


async def test_a_looping_graph_stops_at_max_steps():
    async def retry(ctx: NodeContext) -> str:
        return "again"

    workflow = Workflow(nodes={"retry": retry}, edges={"retry": lambda _: "retry"}, max_steps=3)
    result = await workflow.invoke("go")
    assert result.stop_reason == "max_steps"
    assert result.message == "stopped after 3 nodes"


async def test_a_failing_node_ends_the_run_as_an_error():
    async def broken(ctx: NodeContext) -> str:
        raise OSError("disk unreadable")

    result = await Workflow(nodes={"inspect": broken}).invoke("go")
    assert result.stop_reason == "error"
    assert result.message == "node inspect failed: disk unreadable"


def test_misconfigured_workflows_are_refused():
    async def node(ctx: NodeContext) -> None:
        return None

    def sync_node(ctx: NodeContext) -> None:
        return None

    with pytest.raises(UsageError, match="async function"):
        Workflow(nodes={"a": sync_node})
    with pytest.raises(UsageError, match="lacks"):
        Workflow(nodes={"a": node}, edges={"a": "b"})
    with pytest.raises(UsageError, match="interrupt_before"):
        Workflow(nodes={"a": node}, interrupt_before={"b": True})
    with pytest.raises(UsageError, match="respond"):
        Workflow(nodes={"a": node}, interrupt_before={"a": {"allowed_decisions": ["respond"]}})


async def test_a_run_stopped_at_a_node_renamed_since_cannot_be_resumed_and_says_so():
    """A deploy renamed the node the run waits before: resuming it, or asking where it
    stands, is an UnresumableError naming the missing node and the nodes there are."""
    store, deleted = InMemorySessionStore(), []

    async def inspect(ctx: NodeContext) -> list[str]:
        return ["vol-1"]

    async def delete(ctx: NodeContext) -> str:
        deleted.append(ctx.node)
        return "deleted"

    before = Workflow(
        nodes={"inspect": inspect, "delete": delete},
        interrupt_before={"delete": True},
        session_store=store,
    )
    [asked] = (await before.invoke("go", thread_id="t1")).interrupts
    after = Workflow(
        nodes={"inspect": inspect, "remove": delete},
        interrupt_before={"remove": True},
        session_store=store,
    )
    said = (
        "thread t1 stopped at node 'delete', which this workflow no longer has (its nodes: "
        "'inspect', 'remove'); 'delete' and the nodes after it did not run"
    )
    with pytest.raises(UnresumableError) as refused:
        await after.invoke({asked.id: Decision.approve()}, thread_id="t1")
    assert str(refused.value) == said
    with pytest.raises(UnresumableError, match="stopped at node 'delete'"):
        await after.thread_status("t1")
    assert deleted == []
