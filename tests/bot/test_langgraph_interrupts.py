"""What a graph's interrupts offer and when they were asked: a tagged union response schema
offers only its decisions, a node's second question is dated when it is asked, and a
value JSON cannot hold, or an approval of a malformed shape, is still a card."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypedDict

import pytest
from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from langgraph_agents import ScriptedChatModel, posted_cards
from pydantic import BaseModel, Field, TypeAdapter

from agent_runtime import Decision
from agent_runtime.errors import ResumeError, UsageError
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids
from signoff.langgraph import LangGraphAgent
from signoff.langgraph_interrupts import allowed_decisions


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


def _chat_agent(interrupt_on: dict[str, bool]) -> LangGraphAgent:
    """A real LangChain agent with one tool, gated by ``HumanInTheLoopMiddleware``."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)}"

    gate = HumanInTheLoopMiddleware(interrupt_on=interrupt_on)
    graph = create_agent(
        ScriptedChatModel(messages=iter([])),
        tools=[delete_files],
        middleware=[gate],
        checkpointer=InMemorySaver(),
    )
    return LangGraphAgent(graph, input=lambda text: {"messages": [("user", text)]})


def test_a_human_in_the_loop_gate_naming_a_tool_the_agent_lacks_fails_its_build() -> None:
    """LangChain builds such an agent, and the misspelt tool would run unasked."""
    with pytest.raises(UsageError) as refused:
        _chat_agent({"delete_file": True})
    assert str(refused.value) == (
        "HumanInTheLoopMiddleware: interrupt_on names tools this agent lacks: ['delete_file']; "
        "its tools are ['delete_files']"
    )
    assert _chat_agent({"delete_files": True}).graph is not None


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ({"ask": "Clean up before?", "before": datetime(2026, 1, 2, tzinfo=UTC)}, "2026-01-02"),
        ({"type": "tool_approval", "name": "delete_files", "args": ["/tmp/a"]}, "/tmp/a"),
    ],
)
async def test_a_value_a_card_cannot_take_as_it_is_is_asked_as_a_question(
    make_bot: Any, value: Any, shown: str
) -> None:
    """A value with no JSON form (a datetime) is shown as its text, and one shaped like a
    tool approval whose ``args`` are not an object is a question: either is posted, and
    the graph gets the answer."""

    bot: Harness = await make_bot(spec=_asking(value))
    card = await bot.start(requested_by=CAROL)
    [question] = posted_cards(bot)
    assert question["blocks"][0]["text"]["text"] == "Question: question"
    assert shown in str(question["blocks"])
    status, body = await bot.submit(ids.REPLY_VIEW, card, user=ALICE, text="go ahead")
    assert status == 200 and "errors" not in body, body
    assert (await bot.finished()).startswith("Finished: told go ahead")


async def test_a_declined_question_gives_the_graph_a_rejection(make_bot: Any) -> None:
    """A question declined (or left to expire) is not answered: the graph gets LangChain's
    rejection shape with the reason, never the reason taken for an answer."""
    bot: Harness = await make_bot(spec=_asking("Which region?"))
    card = await bot.start(requested_by=CAROL)
    status, body = await bot.submit(ids.DENY_VIEW, card, user=ALICE, text="not now")
    assert status == 200 and "errors" not in body, body
    final = await bot.finished()
    assert final.startswith("Finished: told {'type': 'reject', 'message': 'not now'}"), final


def _asking(value: Any) -> AgentSpec:
    """An agent whose graph asks ``value`` and ends telling what it was answered."""

    def ask(state: TwoQuestions) -> TwoQuestions:
        return {"result": f"told {interrupt(value)}"}

    builder = StateGraph(TwoQuestions)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    return AgentSpec(
        name="lg-asking",
        build=lambda sessions: LangGraphAgent(
            graph, input=lambda text: {"request": text}, session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
