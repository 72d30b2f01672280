"""A LangChain agent's tool call with NaN or Infinity in its arguments (LangChain's providers
parse them, JSON cannot hold them) is asked about as the approval it is, and its run ends."""

from __future__ import annotations

import math
from typing import Any

from harness import ALICE, CAROL, CHANNEL, Harness
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel

from bot.agents.policy import AgentSpec, Policy
from signoff.langgraph import LangGraphAgent


async def test_a_call_with_nan_arguments_is_an_approval_card_and_its_run_finishes(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    """The card shows each number JSON cannot hold as its text; approved, the tool runs on
    what the model sent, and what it did is kept with the run (in Redis) and told."""
    scaled: list[float] = []

    @lc_tool
    def scale(replicas: float) -> str:
        """Scale the service."""
        scaled.append(replicas)
        return f"scaled to {replicas}"

    @lc_tool
    def look(limit: float) -> str:
        """Look at the service."""
        return f"looked up to {limit}"

    calls = [
        {"id": "c1", "name": "scale", "args": {"replicas": math.nan}},
        {"id": "c2", "name": "look", "args": {"limit": math.inf}},
    ]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="done")])
    )
    graph = create_agent(
        model,
        tools=[scale, look],
        middleware=[HumanInTheLoopMiddleware(interrupt_on={"scale": True})],
        checkpointer=saver,
    )
    spec = AgentSpec(
        name="lc-scale",
        build=lambda sessions: LangGraphAgent(
            graph,
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start("scale it", requested_by=CAROL)
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None
    asked = record.runtime_interrupt
    assert asked.is_approval and not asked.question
    assert asked.tool_call is not None and asked.tool_call.args == {"replicas": "NaN"}
    await bot.decide("approve", value, user=ALICE)
    assert (await bot.finished()).startswith("Finished: done")
    assert len(scaled) == 1 and math.isnan(scaled[0])
    assert "scale: scaled to nan" in bot.thread()
    assert "look: looked up to inf" in bot.thread()
