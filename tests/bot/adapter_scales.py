"""Agents of LangChain, Strands and Genkit (the real packages, scripted models, offline)
whose gated tool ``scale`` takes a service by name (a ``Literal``) and a number of
replicas (an ``int``, at least 1), shared by the tests of the adapted agents' Edit form."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import strands
from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from harness import ALICE, CHANNEL
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel
from pydantic import BaseModel, Field
from strands_agents import ScriptedModel

from bot.agents.policy import AgentSpec, Policy
from signoff.genkit import GenkitAgent
from signoff.langgraph import LangGraphAgent
from signoff.strands import SignoffApprovals, StrandsAgent

Service = Literal["api", "web"]
ARGS = {"service": "api", "replicas": 2}
"""What the model calls ``scale`` with."""
POLICY = Policy(channel=CHANNEL, users=(ALICE,))


def langchain_spec(saver: AsyncSqliteSaver, ran: list[dict[str, Any]]) -> AgentSpec:
    @lc_tool
    def scale(service: Service, replicas: Annotated[int, Field(ge=1)]) -> str:
        """Scale a service."""
        ran.append({"service": service, "replicas": replicas})
        return "scaled"

    call = {"id": "c1", "name": "scale", "args": ARGS}
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=[call]), AIMessage(content="done")])
    )
    gate = HumanInTheLoopMiddleware(interrupt_on={"scale": True})
    return AgentSpec(
        name="lc-scale",
        build=lambda sessions: LangGraphAgent(
            create_agent(model, tools=[scale], middleware=[gate], checkpointer=saver),
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=POLICY,
    )


_AT_LEAST_ONE = {
    "json": {
        "type": "object",
        "properties": {
            "service": {"type": "string", "enum": ["api", "web"]},
            "replicas": {"type": "integer", "minimum": 1},
        },
        "required": ["service", "replicas"],
    }
}
"""Strands takes no constraint in a parameter's type: a tool states it in its own schema."""


def strands_spec(ran: list[dict[str, Any]], *, at_least_one: bool = False) -> AgentSpec:
    def scale(service: Service, replicas: int) -> str:
        """Scale a service.

        Args:
            service: The service to scale.
        """
        ran.append({"service": service, "replicas": replicas})
        return "scaled"

    gated = strands.tool(inputSchema=_AT_LEAST_ONE)(scale) if at_least_one else strands.tool(scale)

    def make_agent() -> strands.Agent:
        return strands.Agent(
            model=ScriptedModel("scale", ARGS),
            tools=[gated],
            hooks=[SignoffApprovals(interrupt_on={"scale": True})],
            callback_handler=None,
        )

    return AgentSpec(
        name="st-scale",
        build=lambda sessions: StrandsAgent(make_agent, session_store=sessions),
        policy=POLICY,
    )


class Scaling(BaseModel):
    service: Service
    replicas: int = Field(ge=1)


def genkit_spec(ran: list[dict[str, Any]]) -> AgentSpec:
    ai = Genkit()

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Asks to scale; once the tool's answer is in, reports it."""
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(name="scale", input=ARGS, ref="call_1")
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    @ai.tool()
    async def scale(input: Scaling, ctx: ToolRunContext) -> str:
        """Scale a service, once a person approves."""
        if not ctx.is_resumed():
            raise Interrupt({"message": f"Scale {input.service}?"})
        ran.append(input.model_dump())
        return "scaled"

    ai.define_model(name="scripted", fn=scripted)
    return AgentSpec(
        name="gk-scale",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["scale"], session_store=sessions
        ),
        policy=POLICY,
    )
