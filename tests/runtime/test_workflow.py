"""Workflows: node approvals, node interrupts, hooks, agent nodes and resuming elsewhere."""

import json

import pytest

from agent_runtime import (
    AfterInvocation,
    AfterNodeCall,
    Agent,
    BeforeNodeCall,
    Decision,
    InMemorySessionStore,
    InterruptResponse,
    NodeContext,
    Remember,
    ResumeError,
    RunFinished,
    ScriptedModel,
    TextMessage,
    ToolCall,
    ToolCallFinished,
    UsageError,
    Workflow,
    tool,
)


def cleanup(runs: list[str], store: InMemorySessionStore | None = None, **options) -> Workflow:
    """inspect -> delete -> report, with approval before delete; ``runs`` logs each node."""

    async def inspect(ctx: NodeContext) -> dict:
        runs.append("inspect")
        return {"path": ctx.input, "files": ["a.log", "b.log"]}

    async def delete(ctx: NodeContext) -> dict:
        runs.append("delete")
        return {"deleted": ctx.input["files"]}

    async def report(ctx: NodeContext) -> str:
        runs.append("report")
        return f"deleted {', '.join(ctx.input['deleted'])}"

    approval = {"delete": {"description": "Delete old log files"}}
    return Workflow(
        nodes={"inspect": inspect, "delete": delete, "report": report},
        session_store=store or InMemorySessionStore(),
        **{"interrupt_before": approval, **options},
    )


async def snapshot_of(store: InMemorySessionStore, thread_id: str) -> str:
    stored = await store.load(thread_id)
    assert stored is not None
    return json.dumps({"version": stored.version, "snapshot": stored.snapshot}, sort_keys=True)


async def test_interrupt_before_delete_asks_with_the_node_and_its_input():
    runs: list[str] = []
    result = await cleanup(runs).invoke("/var/log", thread_id="t")
    assert result.stop_reason == "interrupt"
    assert runs == ["inspect"]
    [approval] = result.interrupts
    assert approval.name == "approval"
    assert approval.description == "Delete old log files"
    assert approval.allowed_decisions == ("approve", "edit", "reject")
    assert approval.tool_call is not None
    assert approval.tool_call.name == "delete"
    assert approval.tool_call.args == {"path": "/var/log", "files": ["a.log", "b.log"]}


async def test_denied_delete_never_runs_and_the_workflow_ends_cancelled_with_the_reason():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    answer = {first.interrupts[0].id: Decision.reject("not during the incident")}
    final = await workflow.invoke(answer, thread_id="t")
    assert final.stop_reason == "cancelled"
    assert final.message == "not during the incident"
    assert final.interrupts == ()
    assert runs == ["inspect"]


async def test_approved_delete_runs_exactly_once_and_report_sees_its_output():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    final = await workflow.invoke({first.interrupts[0].id: Decision.approve()}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert final.message == "deleted a.log, b.log"
    assert final.run_id == first.run_id
    assert runs == ["inspect", "delete", "report"]


async def test_an_approval_sent_as_plain_json_is_accepted():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    final = await workflow.invoke({first.interrupts[0].id: {"type": "approve"}}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert runs == ["inspect", "delete", "report"]


async def test_an_edit_decision_replaces_the_node_input():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    edited = {"path": "/var/log", "files": ["a.log"]}
    final = await workflow.invoke({first.interrupts[0].id: Decision.edit(edited)}, thread_id="t")
    assert final.message == "deleted a.log"
    assert runs == ["inspect", "delete", "report"]


async def test_delete_sees_the_original_input_when_a_human_edited_it():
    seen: list[object] = []

    async def delete(ctx: NodeContext) -> str:
        seen.append((ctx.input, ctx.original_input, ctx.is_resumed))
        return "done"

    workflow = Workflow(nodes={"delete": delete}, interrupt_before={"delete": True})
    first = await workflow.invoke("/tmp/old", thread_id="t")
    edit = Decision.edit({"input": "/tmp/older"})
    await workflow.invoke({first.interrupts[0].id: edit}, thread_id="t")
    assert seen == [("/tmp/older", "/tmp/old", True)]


async def test_remembered_node_approval_is_not_asked_again_on_the_thread():
    runs: list[str] = []
    workflow = cleanup(runs)
    first = await workflow.invoke("/var/log", thread_id="t")
    trust = Decision.approve(remember=Remember(scope="thread"))
    await workflow.invoke({first.interrupts[0].id: trust}, thread_id="t")
    again = await workflow.invoke("/var/log", thread_id="t")
    assert again.stop_reason == "end_turn"
    assert runs == ["inspect", "delete", "report"] * 2


async def test_a_node_interrupt_resumes_with_the_answer_and_code_before_it_runs_again():
    runs: list[str] = []

    async def confirm(ctx: NodeContext) -> str:
        runs.append(f"counted {len(ctx.input)} files, resumed={ctx.is_resumed}")
        answer = ctx.interrupt("confirm", reason={"files": ctx.input})
        runs.append(f"answer: {answer}")
        return f"confirmed by {answer}"

    async def listing(ctx: NodeContext) -> list[str]:
        return ["a.log", "b.log"]

    workflow = Workflow(nodes={"list": listing, "confirm": confirm})
    first = await workflow.invoke("go", thread_id="t")
    assert first.stop_reason == "interrupt"
    [question] = first.interrupts
    assert question.name == "confirm"
    assert question.reason == {"files": ["a.log", "b.log"]}
    assert not question.is_approval

    final = await workflow.invoke(
        InterruptResponse(interrupt_id=question.id, response="alice"), thread_id="t"
    )
    assert final.stop_reason == "end_turn"
    assert final.message == "confirmed by alice"
    # Code before interrupt() runs again on resume, so it must be safe to repeat.
    assert runs == [
        "counted 2 files, resumed=False",
        "counted 2 files, resumed=True",
        "answer: alice",
    ]


async def test_a_nodes_own_question_under_its_approvals_name_is_refused_not_answered_by_it():
    """A node asking ``approval`` itself would get the node approval's answer as its own:
    it is refused with an error saying so, as a tool's is."""
    runs: list[str] = []

    async def delete(ctx: NodeContext) -> str:
        answer = ctx.interrupt("approval", reason="Drop the production database too?")
        runs.append(f"delete, told {answer}")
        return "deleted"

    workflow = Workflow(nodes={"delete": delete}, interrupt_before={"delete": True})
    [asked] = (await workflow.invoke("go", thread_id="t")).interrupts
    result = await workflow.invoke({asked.id: Decision.approve()}, thread_id="t")
    assert runs == []
    assert result.stop_reason == "error"
    assert "'approval' is taken by a hook" in result.message


async def test_a_fresh_workflow_and_store_resume_from_the_stored_snapshot():
    runs: list[str] = []
    store = InMemorySessionStore()
    first = await cleanup(runs, store).invoke("/var/log", thread_id="t")

    stored = await store.load("t")
    assert stored is not None
    other_store = InMemorySessionStore()
    await other_store.save("t", stored.snapshot, expected_version=0)
    other_runs: list[str] = []
    final = await cleanup(other_runs, other_store).invoke(
        {first.interrupts[0].id: Decision.approve()}, thread_id="t"
    )
    assert final.stop_reason == "end_turn"
    assert final.message == "deleted a.log, b.log"
    assert runs == ["inspect"]
    assert other_runs == ["delete", "report"]


async def test_replaying_a_resume_is_refused_and_runs_no_node_again():
    runs: list[str] = []
    store = InMemorySessionStore()
    workflow = cleanup(runs, store)
    first = await workflow.invoke("/var/log", thread_id="t")
    answer = {first.interrupts[0].id: Decision.approve()}
    await workflow.invoke(answer, thread_id="t")
    before = await snapshot_of(store, "t")

    with pytest.raises(ResumeError, match="no open interrupts"):
        await cleanup(runs, store).invoke(answer, thread_id="t")
    assert runs == ["inspect", "delete", "report"]
    assert await snapshot_of(store, "t") == before


@pytest.mark.parametrize(
    "bad_input",
    [
        pytest.param({"int_unknown": Decision.approve()}, id="unknown id"),
        pytest.param("yes", id="malformed answer"),
        pytest.param("clean again", id="prompt while interrupted"),
        pytest.param("reject-not-allowed", id="decision not allowed"),
    ],
)
async def test_a_bad_resume_is_refused_and_changes_nothing(bad_input):
    runs: list[str] = []
    store = InMemorySessionStore()
    workflow = cleanup(runs, store, interrupt_before={"delete": {"allowed_decisions": ["approve"]}})
    first = await workflow.invoke("/var/log", thread_id="t")
    iid = first.interrupts[0].id
    if bad_input == "yes":
        bad_input = {iid: "yes"}
    elif bad_input == "reject-not-allowed":
        bad_input = {iid: Decision.reject("no")}
    before = await snapshot_of(store, "t")

    with pytest.raises(ResumeError):
        await workflow.invoke(bad_input, thread_id="t")
    assert await snapshot_of(store, "t") == before
    assert runs == ["inspect"]


async def test_before_node_call_cancel_ends_the_workflow_with_the_message():
    runs: list[str] = []

    def freeze(event: BeforeNodeCall) -> None:
        if event.node == "delete":
            event.cancel("change freeze until Monday")

    workflow = cleanup(runs, hooks=[freeze], interrupt_before={})
    result = await workflow.invoke("/var/log", thread_id="t")
    assert result.stop_reason == "cancelled"
    assert result.message == "change freeze until Monday"
    assert runs == ["inspect"]


async def test_an_edit_of_a_nodes_own_interrupt_runs_the_node_again_with_the_new_input():
    seen: list[tuple[object, object]] = []

    async def confirm(ctx: NodeContext) -> str:
        ctx.interrupt("confirm", reason={"files": ctx.input})
        seen.append((ctx.input, ctx.original_input))
        return f"deleting {ctx.input}"

    async def listing(ctx: NodeContext) -> list[str]:
        return ["a.log", "b.log"]

    workflow = Workflow(nodes={"list": listing, "confirm": confirm})
    first = await workflow.invoke("go", thread_id="t")
    [question] = first.interrupts
    final = await workflow.invoke({question.id: Decision.edit({"input": ["a.log"]})}, thread_id="t")
    assert final.message == "deleting ['a.log']"
    assert seen == [(["a.log"], ["a.log", "b.log"])]


async def test_before_node_call_hooks_may_interrupt_and_the_node_runs_after_the_answer():
    runs: list[str] = []
    answers: list[object] = []

    def change_ticket(event: BeforeNodeCall) -> None:
        if event.node == "report":
            answers.append(event.interrupt("ticket", reason="which change ticket?"))

    workflow = cleanup(runs, hooks=[change_ticket], interrupt_before={})
    first = await workflow.invoke("/var/log", thread_id="t")
    assert [i.name for i in first.interrupts] == ["ticket"]
    assert runs == ["inspect", "delete"]
    final = await workflow.invoke({first.interrupts[0].id: "CHG-42"}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert answers == ["CHG-42"]
    assert runs == ["inspect", "delete", "report"]


async def test_a_hooks_new_input_is_what_the_approver_sees_and_what_the_node_runs_on():
    """A BeforeNodeCall hook replacing the input is asked about with that input: an
    approval never lets the node run on an input the card did not show."""
    ran: list[object] = []

    async def inspect(ctx: NodeContext) -> dict:
        return {"volumes": ["vol-a"]}

    async def delete(ctx: NodeContext) -> str:
        ran.append(ctx.input)
        return "deleted"

    def refresh(event: BeforeNodeCall) -> None:
        if event.node == "delete":
            event.input = {"volumes": ["vol-a", "vol-prod"]}

    workflow = Workflow(
        nodes={"inspect": inspect, "delete": delete},
        interrupt_before={"delete": True},
        hooks=[refresh],
    )
    [asked] = (await workflow.invoke("go", thread_id="t")).interrupts
    assert asked.tool_call is not None
    assert asked.tool_call.args == {"volumes": ["vol-a", "vol-prod"]}
    await workflow.invoke({asked.id: Decision.approve()}, thread_id="t")
    assert ran == [asked.tool_call.args]


async def test_node_hooks_run_around_each_node_in_order():
    calls: list[str] = []

    def outer_before(event: BeforeNodeCall) -> None:
        calls.append(f"outer before {event.node}")

    def inner_before(event: BeforeNodeCall) -> None:
        calls.append(f"inner before {event.node}")

    def outer_after(event: AfterNodeCall) -> None:
        calls.append(f"outer after {event.node} -> {event.output}")

    def inner_after(event: AfterNodeCall) -> None:
        calls.append(f"inner after {event.node}")

    def first_of_all(event: BeforeNodeCall) -> None:
        calls.append(f"first {event.node}")

    async def one(ctx: NodeContext) -> int:
        calls.append("run one")
        return 1

    async def two(ctx: NodeContext) -> int:
        calls.append(f"run two with {ctx.input}")
        return ctx.input + 1

    workflow = Workflow(
        nodes={"one": one, "two": two},
        hooks=[outer_before, outer_after, inner_before, inner_after],
    )
    workflow.hooks.add(first_of_all, order=-1)
    result = await workflow.invoke("go", thread_id="t")
    assert result.message == "2"
    assert calls == [
        "first one",
        "outer before one",
        "inner before one",
        "run one",
        "inner after one",
        "outer after one -> 1",
        "first two",
        "outer before two",
        "inner before two",
        "run two with 1",
        "inner after two",
        "outer after two -> 2",
    ]


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


async def test_an_after_invocation_hook_may_resume_at_once():
    runs: list[str] = []

    def auto_approve(event: AfterInvocation) -> None:
        if event.result.stop_reason == "interrupt":
            event.resume = [
                InterruptResponse(interrupt_id=i.id, decision=Decision.approve())
                for i in event.result.interrupts
            ]

    result = await cleanup(runs, hooks=[auto_approve]).invoke("/var/log", thread_id="t")
    assert result.stop_reason == "end_turn"
    assert runs == ["inspect", "delete", "report"]


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
