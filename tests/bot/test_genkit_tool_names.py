"""``GenkitAgent`` on the real Genkit SDK: a tool name its Genkit instance has not
registered stops the build of the agent, naming it and the registered tools, instead of
failing the first run."""

from __future__ import annotations

import asyncio

import pytest
from genkit import Genkit
from genkit_agents import define_delete_files

from agent_runtime.errors import UsageError
from agent_runtime.session import InMemorySessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from signoff.genkit import GenkitAgent

LACKS = (
    "GenkitAgent(tools=...) names tools this Genkit instance has not registered: "
    "['delete_file']; its tools are ['ask_user', 'delete_files'] "
    "(define each with @ai.tool() before the agent)"
)


def genkit_with_tools() -> Genkit:
    """A Genkit instance with two tools: ``delete_files`` and an interrupt, ``ask_user``."""
    ai = Genkit()
    define_delete_files(ai, [])
    ai.define_interrupt(name="ask_user", description="Ask the requester a question")
    return ai


def test_a_tool_name_genkit_has_not_registered_fails_the_agents_construction() -> None:
    ai = genkit_with_tools()
    with pytest.raises(UsageError) as refused:
        GenkitAgent(ai, model="scripted", tools=["delete_files", "delete_file"])
    assert str(refused.value) == LACKS
    agent = GenkitAgent(ai, model="scripted", tools=["delete_files", "ask_user"])
    assert agent.tools == ["delete_files", "ask_user"]


async def test_the_check_runs_inside_a_running_event_loop_as_the_bot_builds_agents() -> None:
    """``serve``, ``socket`` and ``worker`` build their agents inside their event loop."""
    assert asyncio.get_running_loop() is not None
    with pytest.raises(UsageError) as refused:
        GenkitAgent(genkit_with_tools(), model="scripted", tools=["delete_file"])
    assert str(refused.value) == LACKS


def test_a_name_a_plugin_or_a_dynamic_provider_resolves_is_left_to_genkit() -> None:
    """Genkit resolves ``plugin/tool`` and ``provider:tool/name`` on demand (a plugin's
    start, an MCP server's list), so such a name is checked by Genkit when first used."""
    names = ["delete_files", "googleai/code_execution", "mcp:tool/*"]
    agent = GenkitAgent(genkit_with_tools(), model="scripted", tools=names)
    assert agent.tools == names


def test_the_signoff_agent_fails_to_build_not_its_first_run() -> None:
    """The registry refuses the agent, naming it, as ``serve``, ``socket`` and ``worker``
    build every agent when they start."""
    ai = genkit_with_tools()
    spec = AgentSpec(
        name="gk-cleanup",
        policy=Policy(users=("U0ALICE",)),
        build=lambda sessions: GenkitAgent(
            ai, model="scripted", tools=["delete_file"], session_store=sessions
        ),
    )
    registry = Registry([spec], sessions=InMemorySessionStore())
    with pytest.raises(UsageError) as refused:
        registry.agent("gk-cleanup")
    assert str(refused.value) == f"agent 'gk-cleanup': {LACKS}"
