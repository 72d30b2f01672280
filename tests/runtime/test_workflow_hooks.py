"""Workflows: node hooks run around each node, may cancel or interrupt, and the input a hook
gives is what the approver sees and what the node runs on."""

from agent_runtime import (
    AfterInvocation,
    AfterNodeCall,
    BeforeNodeCall,
    Decision,
    InterruptResponse,
    NodeContext,
    Workflow,
)

from .workflows import cleanup


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
