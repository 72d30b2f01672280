"""An agent whose one model turn asks to delete many files (forty unless told): a batch
card, or one card per call, in tests."""

from __future__ import annotations

from typing import Any

from harness import ALICE, BOB, CHANNEL

from agent_runtime import (
    Agent,
    ModelRequest,
    ModelResponse,
    SessionStore,
    ToolCall,
    tool,
)
from bot.agents.policy import AgentSpec, Policy

FILES = [f"/tmp/old-{n:02d}.log" for n in range(40)]


class Deletions:
    """Asks to delete ``files`` in one turn, then reports what it was told."""

    def __init__(self, files: list[str]) -> None:
        self.files = files

    async def generate(self, request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            calls = tuple(
                ToolCall(id=f"call_{n}", name="delete_file", args={"path": path})
                for n, path in enumerate(self.files)
            )
            return ModelResponse(tool_calls=calls)
        refused = [m.content for m in results if m.is_error]
        return ModelResponse(text=f"deleted {len(results) - len(refused)}; {refused[:1]}")


def spec(deleted: list[str], files: list[str] = FILES, **policy: Any) -> AgentSpec:
    @tool
    def delete_file(path: str) -> str:
        """Delete one file."""
        deleted.append(path)
        return "deleted"

    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=Deletions(files),
            tools=[delete_file],
            interrupt_on={"delete_file": True},
            session_store=sessions,
            name="cleanup",
        )

    settings = {"channel": CHANNEL, "users": (ALICE, BOB), "batch": True, **policy}
    return AgentSpec(name="cleanup", build=build, policy=Policy(**settings))
