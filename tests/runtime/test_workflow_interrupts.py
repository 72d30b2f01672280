"""Workflows: a node's own interrupts resume it with the answer, and an edit runs it again."""

from agent_runtime import Decision, InterruptResponse, NodeContext, Workflow


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
