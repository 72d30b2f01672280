"""An agents module as users write one, for the command-line tests (``--agents``)."""

from __future__ import annotations

from fakes import OneToolModel

from agent_runtime import Agent, tool
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy


@tool
def delete_files(paths: list[str]) -> str:
    """Delete the given files."""
    return f"deleted {len(paths)} file(s)"


def build(store: SessionStore) -> Agent:
    return Agent(
        model=OneToolModel("delete_files", {"paths": ["/tmp/a"]}),
        tools=[delete_files],
        interrupt_on={"delete_files": True},
        session_store=store,
        name="cleanup",
    )


agents = [AgentSpec(name="cleanup", build=build, policy=Policy(users=("U0ALICE",)))]
