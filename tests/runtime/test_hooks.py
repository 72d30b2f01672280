"""Hook ordering, hook interrupts and cancels, and the retry/resume fields."""

import pytest

from agent_runtime import (
    AfterInvocation,
    AfterModelCall,
    AfterToolCall,
    Agent,
    BeforeToolCall,
    BeforeTools,
    HookRegistry,
    InterruptResponse,
    ModelError,
    ModelRequest,
    ModelResponse,
    ScriptedModel,
    ToolCall,
    ToolResult,
    UsageError,
    tool,
)


def counting_tool(runs: list[dict]):
    @tool
    def act(target: str) -> str:
        """Act on a target."""
        runs.append({"target": target})
        return f"acted on {target}"

    return act


async def test_every_before_tool_call_hook_runs_and_each_may_interrupt():
    ran: list[str] = []

    def legal(event: BeforeToolCall) -> None:
        ran.append("legal")
        event.interrupt("legal_review", reason="contract")

    def finance(event: BeforeToolCall) -> None:
        ran.append("finance")
        event.interrupt("finance_review", reason="budget")

    def audit(event: BeforeToolCall) -> None:
        ran.append("audit")

    runs: list[dict] = []
    model = ScriptedModel([[ToolCall(id="c1", name="act", args={"target": "x"})], "done"])
    agent = Agent(model=model, tools=[counting_tool(runs)], hooks=[legal, finance, audit])
    result = await agent.invoke("go", thread_id="t")
    assert ran == ["legal", "finance", "audit"]
    assert sorted(i.name for i in result.interrupts) == ["finance_review", "legal_review"]
    assert runs == []

    answers = {i.id: "ok" for i in result.interrupts}
    final = await agent.invoke(answers, thread_id="t")
    assert final.stop_reason == "end_turn" and runs == [{"target": "x"}]


async def test_repeated_interrupt_name_on_one_event_is_a_clear_error():
    def first(event: BeforeToolCall) -> None:
        event.interrupt("review")

    def second(event: BeforeToolCall) -> None:
        event.interrupt("review")

    model = ScriptedModel([[ToolCall(id="c1", name="act", args={"target": "x"})]])
    agent = Agent(model=model, tools=[counting_tool([])], hooks=[first, second])
    with pytest.raises(UsageError, match="used twice"):
        await agent.invoke("go")


async def test_cancel_puts_the_message_in_the_result_and_the_tool_never_runs():
    def block(event: BeforeToolCall) -> None:
        event.cancel("blocked by policy")

    runs: list[dict] = []
    model = ScriptedModel([[ToolCall(id="c1", name="act", args={"target": "x"})], "done"])
    agent = Agent(model=model, tools=[counting_tool(runs)], hooks=[block])
    await agent.invoke("go")
    tool_message = model.requests[1].messages[-1]
    assert runs == []
    assert tool_message.content == "blocked by policy" and tool_message.is_error


async def test_before_tools_may_interrupt_the_whole_batch():
    def gate(event: BeforeTools) -> None:
        event.interrupt("batch_gate", reason=[c.name for c in event.tool_calls])

    runs: list[dict] = []
    calls = [ToolCall(name="act", args={"target": t}) for t in ("a", "b")]
    agent = Agent(model=ScriptedModel([calls, "done"]), tools=[counting_tool(runs)], hooks=[gate])
    result = await agent.invoke("go", thread_id="t")
    assert [i.reason for i in result.interrupts] == [["act", "act"]]
    assert runs == []
    await agent.invoke({result.interrupts[0].id: "fine"}, thread_id="t")
    assert sorted(r["target"] for r in runs) == ["a", "b"]


async def test_before_events_run_in_registration_order_and_after_events_in_reverse():
    order: list[str] = []
    registry = HookRegistry()

    def named(tag: str):
        async def before(event: BeforeToolCall) -> None:
            order.append(f"before-{tag}")

        def after(event: AfterToolCall) -> None:
            order.append(f"after-{tag}")

        return before, after

    for tag, rank in (("a", 0), ("b", 0), ("early", -1)):
        before, after = named(tag)
        registry.add(before, order=rank)
        registry.add(after, order=rank)

    runs: list[dict] = []
    model = ScriptedModel([[ToolCall(name="act", args={"target": "x"})], "done"])
    agent = Agent(model=model, tools=[counting_tool(runs)])
    agent.hooks = registry
    await agent.invoke("go")
    assert order == [
        "before-early",
        "before-a",
        "before-b",
        "after-early",
        "after-b",
        "after-a",
    ]


def test_a_hook_without_an_event_annotation_is_refused():
    registry = HookRegistry()
    with pytest.raises(UsageError, match="annotate"):
        registry.add(lambda event: None)


async def test_after_model_call_retry_calls_the_model_again():
    class FlakyModel:
        def __init__(self) -> None:
            self.calls = 0

        async def generate(self, request: ModelRequest) -> ModelResponse:
            self.calls += 1
            if self.calls == 1:
                raise ModelError("overloaded")
            return ModelResponse(text="hello")

    def retry_once(event: AfterModelCall) -> None:
        event.retry = event.exception is not None

    model = FlakyModel()
    result = await Agent(model=model, hooks=[retry_once]).invoke("hi")
    assert model.calls == 2
    assert result.stop_reason == "end_turn" and result.message == "hello"


async def test_model_failure_without_retry_ends_the_run_with_error():
    result = await Agent(model=ScriptedModel([])).invoke("hi")
    assert result.stop_reason == "error"
    assert "script has 0 turns" in result.message


async def test_after_tool_call_retry_runs_the_tool_again_and_result_can_be_replaced():
    attempts: list[int] = []

    @tool
    def flaky() -> str:
        """Fails the first time."""
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("transient")
        return "fine"

    def retry_failures(event: AfterToolCall) -> None:
        event.retry = event.exception is not None

    def redact(event: AfterToolCall) -> None:
        if not event.result.is_error:
            event.result = ToolResult(content=f"[checked] {event.result.content}")

    model = ScriptedModel([[ToolCall(name="flaky", args={})], "done"])
    await Agent(model=model, tools=[flaky], hooks=[retry_failures, redact]).invoke("go")
    assert len(attempts) == 2
    assert model.requests[1].messages[-1].content == "[checked] fine"


async def test_after_invocation_resume_continues_with_interrupt_responses():
    runs: list[dict] = []

    def auto_answer(event: BeforeToolCall) -> None:
        event.interrupt("check")

    def answer_interrupts(event: AfterInvocation) -> None:
        if event.result.stop_reason == "interrupt":
            event.resume = [
                InterruptResponse(interrupt_id=i.id, response="auto")
                for i in event.result.interrupts
            ]

    model = ScriptedModel([[ToolCall(name="act", args={"target": "x"})], "done"])
    agent = Agent(model=model, tools=[counting_tool(runs)], hooks=[auto_answer, answer_interrupts])
    result = await agent.invoke("go")
    assert result.stop_reason == "end_turn" and runs == [{"target": "x"}]
