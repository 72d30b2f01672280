"""Agents for the multi-process tests (SIGNOFF_AGENTS=process_agents).

The cleanup tool appends a line to the file named by SIGNOFF_TEST_MARKS every time it
runs (its pid, its attempt, its idempotency key, the paths), so a test can count runs
across processes. The app's cleanup tool (``cleanup-app``) marks its start the same way,
then, on its first attempt, never returns: its process is killed inside it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from agent_runtime import (
    Agent,
    ModelRequest,
    ModelResponse,
    SessionStore,
    Tool,
    ToolCall,
    ToolContext,
    tool,
)
from signoff import AgentSpec, Policy

ALICE, BOB = "U0ALICE", "U0BOB"


class CleanupModel:
    """Asks to delete two files, then reports the tool's result: it reads the conversation,
    so any process continues a run the same way."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        results = [m for m in request.messages if m.role == "tool"]
        if not results:
            call = ToolCall(id="call_1", name="delete_files", args={"paths": ["/tmp/a", "/tmp/b"]})
            return ModelResponse(tool_calls=(call,))
        return ModelResponse(text=f"done: {results[-1].content}")


@tool
def delete_files(paths: list[str], context: ToolContext) -> str:
    """Delete the given files (here: record that it ran)."""
    line = f"{os.getpid()} {context.attempt} {context.idempotency_key} {' '.join(paths)}"
    with Path(os.environ["SIGNOFF_TEST_MARKS"]).open("a") as marks:
        marks.write(line + "\n")
    return f"deleted {len(paths)} file(s)"


@tool(name="delete_files")
async def delete_files_hanging_first(paths: list[str], context: ToolContext) -> str:
    """Delete the given files (here: record that it started; the first start never ends)."""
    delete_files.function(paths, context)
    if context.attempt == 1:
        await asyncio.Event().wait()
    return f"deleted {len(paths)} file(s)"


def builder(name: str, delete: Tool = delete_files) -> Callable[[SessionStore], Agent]:
    def build(sessions: SessionStore) -> Agent:
        return Agent(
            model=CleanupModel(),
            tools=[delete],
            interrupt_on={"delete_files": True},
            session_store=sessions,
            name=name,
        )

    return build


agents = [
    AgentSpec(name="cleanup", build=builder("cleanup"), policy=Policy(users=(ALICE, BOB))),
    # Run by an AG-UI app alone (started without SIGNOFF_CHANNEL: no cards).
    AgentSpec(
        name="cleanup-app",
        build=builder("cleanup-app", delete_files_hanging_first),
        policy=Policy(users=(ALICE, BOB)),
    ),
    # Asks its approvers in a direct message: a group DM of the two.
    AgentSpec(
        name="cleanup-dm", build=builder("cleanup-dm"), policy=Policy(users=(ALICE, BOB), dm=True)
    ),
]
