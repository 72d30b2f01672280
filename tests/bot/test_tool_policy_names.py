"""What a per-tool policy's key is matched on for Genkit tools that come from a plugin or
a provider (the real SDK, offline): the name the model calls the tool by, so a key naming
no such name fails the build."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from genkit import tool as genkit_tool
from genkit.plugin_api import Action, ActionKind, ActionMetadata, Plugin
from genkit_agents import define_delete_files

from agent_runtime.errors import UsageError
from agent_runtime.runnable import Runnable
from agent_runtime.session import InMemorySessionStore, SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from signoff.genkit import GenkitAgent

AGENT = Policy(users=("U0ALICE",))
STRICT = Policy(groups=("S0ONCALL",), min_approvals=2)


async def lookup(input: dict[str, Any], ctx: ToolRunContext) -> str:
    """Look a host up, once a person approves."""
    if not ctx.is_resumed():
        raise Interrupt({"message": "Look it up?"})
    return "found"


class Ops(Plugin):
    """A plugin whose one tool, ``lookup``, Genkit registers as ``ops/lookup``."""

    name = "ops"

    async def init(self) -> list[Action]:
        return [genkit_tool(lookup, name="lookup").action()]

    async def resolve(self, action_type: ActionKind, name: str) -> Action | None:
        return None

    async def list_actions(self) -> list[ActionMetadata]:
        return []


def plugin_agent(called: str, sessions: SessionStore) -> GenkitAgent:
    """A Genkit agent given the plugin's ``ops/lookup``, whose model calls it ``called``."""
    ai = Genkit(plugins=[Ops()])

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        call = Part.from_tool_request(name=called, input={"host": "db1"}, ref="c1")
        return ModelResponse(message=Message(role="model", content=[call]))

    ai.define_model(name="scripted", fn=scripted)
    return GenkitAgent(ai, model="scripted", tools=["ops/lookup"], session_store=sessions)


@pytest.mark.parametrize("called", ["ops/lookup", "lookup"])
async def test_a_plugins_tool_is_carded_under_the_name_the_model_calls_it_by(called: str) -> None:
    """Genkit offers the tool as ``ops/lookup`` and runs it under its last segment too."""
    agent = plugin_agent(called, InMemorySessionStore())
    asked = await agent.invoke("look db1 up", thread_id="t1")
    assert [i.tool_call.name for i in asked.interrupts if i.tool_call] == [called]
    assert agent.tool_names() == {"ops/lookup", "lookup"}


@pytest.mark.parametrize("called", ["srv/echo", "echo"])
async def test_a_providers_tool_is_carded_under_its_actions_name(called: str) -> None:
    """``mcp:tool/srv/echo`` selects the provider's action ``srv/echo``: the model is
    offered that name, and Genkit runs it under its last segment too."""
    ai = Genkit()

    async def listed() -> dict[str, list[Action]]:
        echo = genkit_tool(lookup, name="srv/echo").action()
        echo.metadata["name"] = echo.name  # what a provider lists its tools by
        return {"tool": [echo]}

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        assert [t.name for t in request.tools or ()] == ["srv/echo"]
        call = Part.from_tool_request(name=called, input={"host": "db1"}, ref="c1")
        return ModelResponse(message=Message(role="model", content=[call]))

    ai.define_dynamic_action_provider("mcp", listed)
    ai.define_model(name="scripted", fn=scripted)
    agent = GenkitAgent(ai, model="scripted", tools=["mcp:tool/srv/echo"])
    asked = await agent.invoke("echo db1", thread_id="t1")
    assert [i.tool_call.name for i in asked.interrupts if i.tool_call] == [called]
    assert agent.tool_names() == {"srv/echo", "echo"}


def _registry(build: Callable[[SessionStore], Runnable], tools: dict[str, Policy]) -> Registry:
    spec = AgentSpec(name="ops", build=build, policy=AGENT, tools=tools)
    return Registry([spec], sessions=InMemorySessionStore())


def provided_agent(sessions: SessionStore) -> GenkitAgent:
    """A Genkit agent with a local tool and a provider's ``srv/echo`` (``mcp:tool/...``)."""
    ai = Genkit()
    define_delete_files(ai, [])
    tools = ["delete_files", "mcp:tool/srv/echo"]
    return GenkitAgent(ai, model="scripted", tools=tools, session_store=sessions)


@pytest.mark.parametrize(
    ("build", "key", "its_tools"),
    [
        (lambda s: plugin_agent("lookup", s), "ops/lokup", "['lookup', 'ops/lookup']"),
        (provided_agent, "mcp:tool/srv/echo", "['delete_files', 'echo', 'srv/echo']"),
    ],
)
def test_a_key_no_card_of_a_plugins_or_providers_tool_carries_fails_the_build(
    build: Callable[[SessionStore], Runnable], key: str, its_tools: str
) -> None:
    """A misspelt plugin tool, or a provider's selector (its tool is carded as ``echo``)."""
    with pytest.raises(UsageError) as refused:
        _registry(build, {key: STRICT}).agent("ops")
    assert str(refused.value) == (
        f"agent 'ops': AgentSpec(tools=...) gives a policy to tools it lacks: [{key!r}]; its "
        f"tools are {its_tools} (calls of a tool without its own policy get the agent's)"
    )
    names = build(InMemorySessionStore()).tool_names() or ()
    assert _registry(build, dict.fromkeys(names, STRICT)).agent("ops") is not None
