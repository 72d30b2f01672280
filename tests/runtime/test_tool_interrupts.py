"""Tools that stop for a human and continue with the answer."""

from datetime import UTC, datetime
from typing import Annotated

import pytest
from pydantic import BaseModel, Field

from agent_runtime import (
    Agent,
    Decision,
    InMemorySessionStore,
    InterruptResponse,
    ScriptedModel,
    ToolCall,
    ToolContext,
    interrupt_id,
    interrupt_tool,
    tool,
)
from agent_runtime.errors import ResumeError, ToolInputError


def make_booking_tool(log: list[str]):
    @tool
    def book_flight(city: str, context: ToolContext) -> str:
        """Book a flight after a human picks the seat."""
        log.append(f"before:{city}")
        seat = context.interrupt("seat", reason={"city": city})
        log.append(f"after:{seat}")
        return f"booked {city} seat {seat}"

    return book_flight


async def test_tool_interrupt_stops_and_resume_returns_the_answer():
    log: list[str] = []
    model = ScriptedModel([[ToolCall(id="c1", name="book_flight", args={"city": "Oslo"})], "ok"])
    agent = Agent(model=model, tools=[make_booking_tool(log)])

    first = await agent.invoke("book", thread_id="t")
    assert first.stop_reason == "interrupt"
    [pending] = first.interrupts
    assert pending.name == "seat" and pending.reason == {"city": "Oslo"}

    second = await agent.invoke(
        [InterruptResponse(interrupt_id=pending.id, response="12A")], thread_id="t"
    )
    assert second.stop_reason == "end_turn"
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role == "tool" and tool_message.content == "booked Oslo seat 12A"
    # Code before interrupt() runs again on resume; code after it runs once.
    assert log == ["before:Oslo", "before:Oslo", "after:12A"]


async def test_interrupt_id_derives_from_tool_call_id_and_name():
    model = ScriptedModel([[ToolCall(id="c1", name="book_flight", args={"city": "Oslo"})]])
    agent = Agent(model=model, tools=[make_booking_tool([])])
    result = await agent.invoke("book")
    assert result.interrupts[0].id == interrupt_id("c1", "seat")
    assert interrupt_id("c1", "seat") != interrupt_id("c2", "seat")
    assert interrupt_id("c1", "seat") != interrupt_id("c1", "window")


async def test_one_tool_interrupts_again_after_its_first_answer():
    @tool
    def transfer(amount: int, context: ToolContext) -> str:
        """Move money with two confirmations."""
        first = context.interrupt("confirm", reason=amount)
        second = context.interrupt("second_confirm", reason=amount)
        return f"{first}/{second}"

    model = ScriptedModel([[ToolCall(id="c1", name="transfer", args={"amount": 5})], "done"])
    agent = Agent(model=model, tools=[transfer])
    first = await agent.invoke("pay", thread_id="t")
    assert [i.name for i in first.interrupts] == ["confirm"]
    second = await agent.invoke({first.interrupts[0].id: "yes"}, thread_id="t")
    assert [i.name for i in second.interrupts] == ["second_confirm"]
    assert second.interrupts[0].id != first.interrupts[0].id
    third = await agent.invoke({second.interrupts[0].id: "sure"}, thread_id="t")
    assert third.stop_reason == "end_turn"
    assert model.requests[1].messages[-1].content == "yes/sure"


async def test_resumed_context_knows_it_was_resumed_and_sees_metadata():
    seen: list[tuple[bool, dict]] = []

    @tool
    def ask(context: ToolContext) -> str:
        """Ask a question."""
        seen.append((context.is_resumed, dict(context.resumed_metadata)))
        return str(context.interrupt("q"))

    model = ScriptedModel([[ToolCall(id="c1", name="ask", args={})], "done"])
    agent = Agent(model=model, tools=[ask])
    first = await agent.invoke("go", thread_id="t")
    answer = InterruptResponse(
        interrupt_id=first.interrupts[0].id, response="42", metadata={"user": "U1"}
    )
    await agent.invoke([answer], thread_id="t")
    assert seen == [(False, {}), (True, {"user": "U1"})]


async def test_interrupt_tool_asks_and_returns_the_answer_as_output():
    class Question(BaseModel):
        question: str
        choices: list[str]

    ask_user = interrupt_tool("ask_user", Question, "Ask the user to choose")
    model = ScriptedModel(
        [
            [
                ToolCall(
                    id="c1", name="ask_user", args={"question": "Color?", "choices": ["r", "g"]}
                )
            ],
            "ok",
        ]
    )
    agent = Agent(model=model, tools=[ask_user])
    first = await agent.invoke("pick", thread_id="t")
    [pending] = first.interrupts
    assert pending.reason == {"question": "Color?", "choices": ["r", "g"]}
    assert pending.question and pending.options == ("r", "g")
    assert ask_user.input_schema["required"] == ["question", "choices"]
    await agent.invoke({pending.id: "g"}, thread_id="t")
    assert model.requests[1].messages[-1].content == "g"


async def test_a_declined_question_tells_the_model_in_a_sentence_not_a_decision_repr():
    class Question(BaseModel):
        question: str

    ask_user = interrupt_tool("ask_user", Question, "Ask the user")
    model = ScriptedModel([[ToolCall(id="c1", name="ask_user", args={"question": "Why?"})], "ok"])
    agent = Agent(model=model, tools=[ask_user])
    first = await agent.invoke("ask", thread_id="t")
    [pending] = first.interrupts
    assert pending.question and pending.options == ()
    await agent.invoke({pending.id: Decision.reject("not now")}, thread_id="t")
    assert model.requests[1].messages[-1].content == "The question was not answered: not now."


def make_transfer_tool(seen: list[tuple[int, object, object]]):
    @tool
    def transfer(amount: int, context: ToolContext) -> str:
        """Move money once a person confirms."""
        answer = context.interrupt("confirm", reason={"amount": amount})
        seen.append((amount, answer, context.original_input))
        return f"moved {amount}"

    return transfer


async def test_an_edit_of_a_tools_own_interrupt_restarts_the_tool_with_the_new_input():
    seen: list[tuple[int, object, object]] = []
    model = ScriptedModel([[ToolCall(id="c1", name="transfer", args={"amount": 500})], "ok"])
    agent = Agent(model=model, tools=[make_transfer_tool(seen)])
    first = await agent.invoke("pay", thread_id="t")
    [pending] = first.interrupts
    edit = Decision.edit({"amount": 50})
    second = await agent.invoke({pending.id: edit}, thread_id="t")
    assert second.stop_reason == "end_turn"
    assert seen == [(50, edit, {"amount": 500})]
    assert model.requests[1].messages[-1].content == "moved 50"


async def test_an_edit_that_does_not_fit_the_tool_changes_nothing():
    model = ScriptedModel([[ToolCall(id="c1", name="transfer", args={"amount": 500})], "ok"])
    agent = Agent(model=model, tools=[make_transfer_tool([])])
    first = await agent.invoke("pay", thread_id="t")
    [pending] = first.interrupts
    with pytest.raises(ResumeError, match="amount"):
        await agent.invoke({pending.id: Decision.edit({"amount": "lots"})}, thread_id="t")
    status = await agent.thread_status("t")
    assert status.status == "interrupted"


def test_a_tools_annotated_constraints_are_in_its_schema_and_enforced():
    @tool
    def resize(size: Annotated[int, Field(gt=0, description="new size in GB")]) -> str:
        """Resize a volume."""
        return f"resized to {size}"

    assert resize.input_schema["properties"]["size"]["exclusiveMinimum"] == 0
    assert resize.input_schema["properties"]["size"]["description"] == "new size in GB"
    with pytest.raises(ToolInputError, match="greater than 0"):
        resize.validate({"size": 0})


async def test_an_interrupt_reason_json_cannot_hold_is_asked_as_json_and_resumed_anywhere():
    """A reason holding a datetime or a tuple is kept as JSON (the datetime as its text):
    the run stops and asks instead of failing its save, and shows the same reason as the
    thread's stored state, which another process resumes from."""

    @tool
    def book_flight(city: str, context: ToolContext) -> str:
        """Book a flight after a human picks the seat."""
        departs = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
        seat = context.interrupt("seat", reason={"departs": departs, "free": ("12A", "14C")})
        return f"booked {city} seat {seat}"

    def agent(store: InMemorySessionStore, *turns: str | list[ToolCall]) -> Agent:
        return Agent(model=ScriptedModel(list(turns)), tools=[book_flight], session_store=store)

    store = InMemorySessionStore()
    calls = [ToolCall(id="c1", name="book_flight", args={"city": "Oslo"})]
    [pending] = (await agent(store, calls).invoke("book", thread_id="t")).interrupts
    kept = {"departs": "2026-03-01 09:30:00+00:00", "free": ["12A", "14C"]}
    assert pending.reason == kept
    status = await agent(store).thread_status("t")
    assert status is not None and [i.reason for i in status.interrupts] == [kept]
    final = await agent(store, "booked").invoke({pending.id: "14C"}, thread_id="t")
    assert final.stop_reason == "end_turn"
    assert (await store.load("t")).snapshot["messages"][-2]["content"] == "booked Oslo seat 14C"
