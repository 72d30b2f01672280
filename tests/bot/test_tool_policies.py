"""A per-tool policy (``AgentSpec(tools={...})``) naming a tool the agent lacks is refused
when the agent is built, naming the key and the agent's tools: a misspelt name's calls
would otherwise get the agent's policy, perhaps looser. Our own agents and workflows,
and adapted ones whose tools are known before a run (the real SDKs, offline)."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypedDict

import pytest
from fakes import OneToolModel
from genkit import Genkit
from genkit_agents import define_delete_files
from langchain.agents import create_agent
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph_agents import ScriptedChatModel
from strands import Agent as StrandsSDKAgent
from strands import tool as strands_tool
from strands_agents import ScriptedModel

from agent_runtime import Agent, Workflow, tool
from agent_runtime.errors import UsageError
from agent_runtime.runnable import Runnable
from agent_runtime.session import InMemorySessionStore, SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from bot.errors import BotError
from bot.process.builds import build_agents
from signoff.genkit import GenkitAgent
from signoff.langgraph import LangGraphAgent
from signoff.strands import StrandsAgent

AGENT = Policy(users=("U0ALICE",), min_approvals=1)
STRICT = Policy(groups=("S0ONCALL",), min_approvals=2)


@tool
def delete_files(paths: list[str]) -> str:
    """Delete files."""
    return f"deleted {len(paths)}"


@strands_tool
def strands_delete_files(paths: list[str]) -> str:
    """Delete files."""
    return f"deleted {len(paths)}"


@lc_tool
def lc_delete_files(paths: list[str]) -> str:
    """Delete files."""
    return f"deleted {len(paths)}"


def own_agent(sessions: SessionStore) -> Runnable:
    return Agent(
        model=OneToolModel("delete_files", {"paths": ["/tmp/a"]}),
        tools=[delete_files],
        session_store=sessions,
    )


def own_workflow(sessions: SessionStore) -> Runnable:
    async def report(text: str) -> str:
        return text

    agent = Agent(model=OneToolModel("delete_files", {"paths": ["/tmp/a"]}), tools=[delete_files])
    return Workflow(nodes={"clean": agent, "report": report}, session_store=sessions)


def strands_agent(sessions: SessionStore) -> Runnable:
    def make() -> StrandsSDKAgent:
        return StrandsSDKAgent(
            model=ScriptedModel("strands_delete_files", {"paths": ["/tmp/a"]}),
            tools=[strands_delete_files],
            callback_handler=None,
        )

    return StrandsAgent(make, session_store=sessions)


def genkit_agent(sessions: SessionStore) -> Runnable:
    ai = Genkit()
    define_delete_files(ai, [])
    return GenkitAgent(ai, model="scripted", tools=["delete_files"], session_store=sessions)


def langchain_agent(sessions: SessionStore) -> Runnable:
    graph = create_agent(
        ScriptedChatModel(messages=iter([])), tools=[lc_delete_files], checkpointer=InMemorySaver()
    )
    return LangGraphAgent(graph, input=lambda text: {"messages": [("user", text)]})


def _registry(build: Callable[[SessionStore], Runnable], tools: dict[str, Policy]) -> Registry:
    spec = AgentSpec(name="cleanup", build=build, policy=AGENT, tools=tools)
    return Registry([spec], sessions=InMemorySessionStore())


@pytest.mark.parametrize(
    ("build", "tool_name", "its_tools"),
    [
        (own_agent, "delete_files", "['delete_files']"),
        (own_workflow, "delete_files", "['clean', 'delete_files', 'report']"),
        (strands_agent, "strands_delete_files", "['strands_delete_files']"),
        (genkit_agent, "delete_files", "['delete_files']"),
        (langchain_agent, "lc_delete_files", "['lc_delete_files']"),
    ],
)
def test_a_policy_for_a_tool_the_agent_lacks_fails_its_build(
    build: Callable[[SessionStore], Runnable], tool_name: str, its_tools: str
) -> None:
    misspelt = tool_name.removesuffix("s")
    with pytest.raises(UsageError) as refused:
        _registry(build, {tool_name: STRICT, misspelt: STRICT}).agent("cleanup")
    assert str(refused.value) == (
        f"agent 'cleanup': AgentSpec(tools=...) gives a policy to tools it lacks: "
        f"[{misspelt!r}]; its tools are {its_tools} (calls of a tool without its own policy "
        "get the agent's)"
    )
    registry = _registry(build, {tool_name: STRICT})
    assert registry.agent("cleanup") is registry.agent("cleanup")


async def test_an_agent_refused_for_its_tool_policies_is_built_once_and_closed() -> None:
    """What the refused build holds (a connection, a client) is released as the bot stops."""
    built: list[_Closing] = []

    def build(sessions: SessionStore) -> Runnable:
        built.append(_Closing(model=OneToolModel("delete_files", {}), tools=[delete_files]))
        return built[-1]

    registry = _registry(build, {"delete_file": STRICT})
    for _ in range(2):
        with pytest.raises(UsageError, match="\\['delete_file'\\]"):
            registry.agent("cleanup")
    await registry.aclose()
    assert [agent.closed for agent in built] == [1]


class _Closing(Agent):
    """An agent counting its ``aclose`` calls."""

    closed = 0

    async def aclose(self) -> None:
        self.closed += 1


def test_a_workflow_node_may_have_a_policy_of_its_own() -> None:
    """A node asked about before it runs (``interrupt_before``) is carded under its name."""
    assert _registry(own_workflow, {"report": STRICT}).agent("cleanup") is not None


def test_start_up_stops_naming_the_agent_and_the_key() -> None:
    """``serve``, ``socket`` and ``worker`` build every agent as they start."""
    services: Any = SimpleNamespace(registry=_registry(own_agent, {"delete_file": STRICT}))
    with pytest.raises(BotError) as refused:
        build_agents(services)
    assert "agent 'cleanup'" in str(refused.value) and "['delete_file']" in str(refused.value)


class _State(TypedDict):
    request: str


def test_an_agent_whose_tools_only_its_runs_tell_is_not_checked() -> None:
    """A LangGraph graph of its own (its interrupts name what they like) and a Genkit agent
    given a provider's ``*`` selector (``mcp:tool/*``, listed only as a generation asks)."""
    builder = StateGraph(_State)
    builder.add_node("ask", lambda state: state)
    builder.set_entry_point("ask")
    graph = builder.compile(checkpointer=InMemorySaver())

    def plain_graph(sessions: SessionStore) -> Runnable:
        return LangGraphAgent(graph, input=lambda text: {"request": text}, session_store=sessions)

    def provided(sessions: SessionStore) -> Runnable:
        ai = Genkit()
        define_delete_files(ai, [])
        names = ["delete_files", "mcp:tool/*"]
        return GenkitAgent(ai, model="scripted", tools=names, session_store=sessions)

    for build in (plain_graph, provided):
        assert _registry(build, {"remove_everything": STRICT}).agent("cleanup") is not None
        assert build(InMemorySessionStore()).tool_names() is None
