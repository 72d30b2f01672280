"""Agents on the real Genkit SDK with a model defined in the test (offline), shared by the
Genkit adapter's test files."""

from __future__ import annotations

from typing import Any

from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from harness import ALICE, CHANNEL
from pydantic import BaseModel

from bot.agents.policy import AgentSpec, Policy
from signoff.genkit import GenkitAgent


class Paths(BaseModel):
    paths: list[str]


def define_delete_files(ai: Genkit, deleted: list[list[str]]) -> None:
    """The gated tool: it asks first (Genkit's ``Interrupt``), and runs once restarted."""

    @ai.tool()
    async def delete_files(input: Paths, ctx: ToolRunContext) -> str:
        """Delete files, once a person approves."""
        if not ctx.is_resumed():
            raise Interrupt({"message": f"Delete {len(input.paths)} files?"})
        deleted.append(input.paths)
        return f"deleted {len(input.paths)}"


def genkit_spec(deleted: list[list[str]]) -> AgentSpec:
    ai = Genkit()

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        """Asks to delete two files; once a tool's answer is in, reports it."""
        results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
        if not results:
            call = Part.from_tool_request(
                name="delete_files", input={"paths": ["/tmp/a", "/tmp/b"]}, ref="call_1"
            )
            return ModelResponse(message=Message(role="model", content=[call]))
        return ModelResponse(
            message=Message(role="model", content=[Part(text=f"done: {results[-1].output}")])
        )

    ai.define_model(name="scripted", fn=scripted)
    define_delete_files(ai, deleted)
    return AgentSpec(
        name="gk-cleanup",
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["delete_files"], session_store=sessions
        ),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
    )
