"""What a per-tool policy's key is matched on for adapted agents whose tools come from
elsewhere (the real SDKs, offline): a Genkit plugin's or provider's tool is carded under
the name Genkit offers it by, whichever of its names the model calls, so a key naming no
such name (its last segment too) fails the build; a LangGraph graph of its own, and a
provider's ``*`` selector, tell their names only as they run, so their keys are logged at
start-up, with the names they do tell."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypedDict

import pytest
from genkit import Genkit, Interrupt, Message, ModelRequest, ModelResponse, Part, ToolRunContext
from genkit import tool as genkit_tool
from genkit.plugin_api import Action, ActionKind, ActionMetadata, Plugin
from genkit_agents import define_delete_files
from harness import ALICE, BOB, CHANNEL, Harness
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt
from langgraph_agents import ScriptedChatModel

from agent_runtime import Decision
from agent_runtime.errors import UsageError
from agent_runtime.interrupts import InterruptResponse
from agent_runtime.runnable import Runnable
from agent_runtime.session import InMemorySessionStore, SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from bot.process.builds import build_agents
from bot.ui.ids import APPROVE
from signoff.genkit import GenkitAgent
from signoff.langgraph import LangGraphAgent

AGENT = Policy(users=("U0ALICE",))
STRICT = Policy(groups=("S0ONCALL",), min_approvals=2)


LOOKED_UP: list[dict[str, Any]] = []


async def lookup(input: dict[str, Any], ctx: ToolRunContext) -> str:
    """Look a host up, once a person approves."""
    if not ctx.is_resumed():
        raise Interrupt({"message": "Look it up?"})
    LOOKED_UP.append(input)
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


async def call_then_answer(called: str, request: ModelRequest) -> ModelResponse:
    """The model's turns: a call of the tool named ``called``, then its result as text."""
    results = [p.tool_response for m in request.messages for p in m.content if p.tool_response]
    if results:
        return ModelResponse(message=Message(role="model", content=[Part(text="db1 found")]))
    call = Part.from_tool_request(name=called, input={"host": "db1"}, ref="c1")
    return ModelResponse(message=Message(role="model", content=[call]))


def plugin_agent(called: str, sessions: SessionStore) -> GenkitAgent:
    """A Genkit agent given the plugin's ``ops/lookup``, whose model calls it ``called``."""
    ai = Genkit(plugins=[Ops()])

    async def scripted(request: ModelRequest, ctx: Any) -> ModelResponse:
        return await call_then_answer(called, request)

    ai.define_model(name="scripted", fn=scripted)
    return GenkitAgent(ai, model="scripted", tools=["ops/lookup"], session_store=sessions)


@pytest.mark.parametrize("called", ["ops/lookup", "lookup"])
async def test_a_plugins_tool_is_carded_under_its_full_name_whatever_the_model_calls_it(
    called: str,
) -> None:
    """Genkit offers the tool as ``ops/lookup`` and runs it under its last segment too; an
    approval restarts it (Genkit finds it by the name the model used) and it runs once."""
    agent, LOOKED_UP[:] = plugin_agent(called, InMemorySessionStore()), []
    asked = await agent.invoke("look db1 up", thread_id="t1")
    status = await agent.thread_status("t1")
    assert status is not None
    for told in (asked.interrupts, status.interrupts):  # as raised, and as the thread keeps it
        assert [i.tool_call.name for i in told if i.tool_call] == ["ops/lookup"]
    [question] = asked.interrupts
    approve = [InterruptResponse(interrupt_id=question.id, decision=Decision.approve())]
    done = await agent.invoke(approve, thread_id="t1")
    assert (done.message, LOOKED_UP) == ("db1 found", [{"host": "db1"}])
    assert agent.tool_names() == {"ops/lookup"}


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
        return await call_then_answer(called, request)

    ai.define_dynamic_action_provider("mcp", listed)
    ai.define_model(name="scripted", fn=scripted)
    LOOKED_UP[:] = []
    for tools in (["mcp:tool/srv/echo"], ["mcp:tool/*"]):  # named, or listed as it runs
        agent = GenkitAgent(ai, model="scripted", tools=tools)
        asked = await agent.invoke("echo db1", thread_id="t1")
        assert [i.tool_call.name for i in asked.interrupts if i.tool_call] == ["srv/echo"]
        decision = Decision.approve()
        done = await agent.invoke(
            [InterruptResponse(interrupt_id=asked.interrupts[0].id, decision=decision)],
            thread_id="t1",
        )
        assert done.message == "db1 found"
    assert LOOKED_UP == [{"host": "db1"}] * 2
    assert GenkitAgent(ai, model="scripted", tools=["mcp:tool/srv/echo"]).tool_names() == {
        "srv/echo"
    }


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
        (lambda s: plugin_agent("lookup", s), "ops/lokup", "['ops/lookup']"),
        (provided_agent, "mcp:tool/srv/echo", "['delete_files', 'srv/echo']"),
        (lambda s: own_graph(s, tool_node="tools"), "delete_file", "['delete_files']"),
    ],
)
def test_a_key_no_card_of_a_plugins_or_providers_tool_carries_fails_the_build(
    build: Callable[[SessionStore], Runnable], key: str, its_tools: str
) -> None:
    """A misspelt plugin tool, a provider's selector (its tool is carded as ``srv/echo``),
    and a graph whose ``tools`` node is a ToolNode, taken for a LangChain agent (its shape)."""
    with pytest.raises(UsageError) as refused:
        _registry(build, {key: STRICT}).agent("ops")
    assert str(refused.value) == (
        f"agent 'ops': AgentSpec(tools=...) gives a policy to tools it lacks: [{key!r}]; its "
        f"tools are {its_tools} (calls of a tool without its own policy get the agent's)"
    )
    names = build(InMemorySessionStore()).tool_names() or ()
    assert _registry(build, dict.fromkeys(names, STRICT)).agent("ops") is not None


class _State(TypedDict):
    request: str
    result: str


@lc_tool
def delete_files(paths: list[str]) -> str:
    """Delete files."""
    return f"deleted {len(paths)}"


def own_graph(sessions: SessionStore, *, tool_node: str = "act") -> Runnable:
    """A graph whose ``review`` node asks about the calls its ToolNode runs."""

    def review(state: _State) -> _State:
        decision = interrupt(
            {"type": "tool_approval", "tool_call_id": "c1", "name": "delete_files", "args": {}}
        )
        return {"result": str(decision)}

    builder = StateGraph(_State)
    builder.add_node("review", review)
    builder.add_node(tool_node, ToolNode([delete_files]))
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    return LangGraphAgent(graph, input=lambda text: {"request": text}, session_store=sessions)


def wildcard_agent(sessions: SessionStore) -> Runnable:
    ai = Genkit()
    define_delete_files(ai, [])
    tools = ["delete_files", "mcp:tool/*"]
    return GenkitAgent(ai, model="scripted", tools=tools, session_store=sessions)


@pytest.mark.parametrize(
    ("build", "told"),
    [(own_graph, "['delete_files']"), (wildcard_agent, "['delete_files']")],
)
def test_keys_of_an_agent_whose_tools_only_its_runs_tell_are_logged_at_start_up(
    build: Callable[[SessionStore], Runnable], told: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Built (its runs may well carry the key), and each key it cannot match is logged."""
    caplog.set_level(logging.WARNING, logger="bot.agents.registry")
    registry = _registry(build, {"delete_files": STRICT, "delete_file": STRICT})
    services: Any = SimpleNamespace(registry=registry)
    build_agents(services)
    assert build(InMemorySessionStore()).tool_names() is None
    assert [r.getMessage() for r in caplog.records] == [
        "agent 'ops': AgentSpec(tools=...) keys ['delete_file'] cannot be checked: its tools "
        f"are known only as it runs (those it tells now: {told}); a key no card names leaves "
        "that tool's calls under the agent's policy"
    ]


def server_wildcard_agent(sessions: SessionStore) -> Runnable:
    ai = Genkit()
    define_delete_files(ai, [])
    tools = ["delete_files", "mcp:tool/srv/*"]
    return GenkitAgent(ai, model="scripted", tools=tools, session_store=sessions)


def test_a_key_no_tool_a_selector_may_list_is_named_by_fails_the_build(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``mcp:tool/srv/*`` lists tools named ``srv/...`` only: a misspelt local tool's key,
    which no card of it can carry, fails the build; a key it may list is logged."""
    caplog.set_level(logging.WARNING, logger="bot.agents.registry")
    with pytest.raises(UsageError) as refused:
        _registry(server_wildcard_agent, {"delete_file": STRICT}).agent("ops")
    assert str(refused.value) == (
        "agent 'ops': AgentSpec(tools=...) gives a policy to tools it lacks: ['delete_file']; "
        "none of its tools it tells now (['delete_files']) nor any its runs may name has that "
        "name (calls of a tool without its own policy get the agent's)"
    )
    registry = _registry(server_wildcard_agent, {"delete_files": STRICT, "srv/echo": STRICT})
    assert registry.agent("ops") is not None
    assert [r.getMessage() for r in caplog.records] == [
        "agent 'ops': AgentSpec(tools=...) keys ['srv/echo'] cannot be checked: its tools are "
        "known only as it runs (those it tells now: ['delete_files']); a key no card names "
        "leaves that tool's calls under the agent's policy"
    ]


async def test_a_question_a_langchain_agents_tool_asks_gets_the_agents_policy() -> None:
    """Only a tool approval carries a tool's name: a tool calling ``interrupt()`` itself
    asks a question, under the agent's policy, even with a key naming that tool."""

    @lc_tool
    def drop_table(table: str) -> str:
        """Drop a table, once a person says so."""
        return f"dropped {table}: {interrupt(f'Drop {table}?')}"

    call = {"name": "drop_table", "args": {"table": "users"}, "id": "c1"}
    model = ScriptedChatModel(messages=iter([AIMessage(content="", tool_calls=[call])]))
    graph = create_agent(model, tools=[drop_table], checkpointer=InMemorySaver())
    agent = LangGraphAgent(graph, input=lambda text: {"messages": [("user", text)]})
    spec = AgentSpec(name="ops", build=lambda s: agent, policy=AGENT, tools={"drop_table": STRICT})
    assert Registry([spec], sessions=InMemorySessionStore()).agent("ops") is agent

    asked = await agent.invoke("drop users", thread_id="t1")
    [question] = asked.interrupts
    assert question.question and question.reason == "Drop users?"
    assert question.tool_call is None and spec.policy_for(None) is AGENT


def test_a_key_by_a_tools_last_segment_fails_the_build_naming_its_full_name() -> None:
    """Cards carry ``ops/lookup`` however the model calls it, so ``lookup`` keys nothing."""
    with pytest.raises(UsageError) as refused:
        _registry(lambda s: plugin_agent("lookup", s), {"lookup": STRICT}).agent("ops")
    assert str(refused.value).endswith(
        "(calls of a tool without its own policy get the agent's); key each tool by its "
        "full name: 'lookup' as 'ops/lookup'"
    )


@pytest.mark.parametrize("tools", [["ops/lookup", "mcp:tool/srv/lookup"], ["lookup", "ops/lookup"]])
def test_two_tools_sharing_a_last_segment_fail_the_agents_build(tools: list[str]) -> None:
    """The model may call either by that segment: Genkit refuses every generation given
    both, and which one a card named would be a guess."""
    ai = Genkit(plugins=[Ops()])
    ai.tool(name="lookup")(lookup)
    with pytest.raises(UsageError) as refused:
        GenkitAgent(ai, model="scripted", tools=tools)
    shared = sorted(t.removeprefix("mcp:tool/") for t in tools)
    assert str(refused.value) == (
        f"GenkitAgent(tools=...) names tools that share a last segment: [{shared!r}]; the "
        "model may call a tool by it, so Genkit refuses to offer them in one generation"
    )


async def test_a_tools_policy_applies_to_a_call_by_its_last_segment(make_bot: Any) -> None:
    """The model calls ``lookup``; the policy keyed ``ops/lookup`` (its own channel) decides
    where the card goes and who approves it, and approving runs the tool once."""
    spec = AgentSpec(
        name="ops",
        build=lambda sessions: plugin_agent("lookup", sessions),
        policy=Policy(channel=CHANNEL, users=(ALICE,)),
        tools={"ops/lookup": Policy(channel="C0SEC", users=(BOB,))},
    )
    bot: Harness = await make_bot(spec=spec)
    LOOKED_UP[:] = []
    value = await bot.start("look db1 up")
    card = bot.posted(0)
    assert card["channel"] == "C0SEC"
    assert card["blocks"][0]["text"]["text"] == "Approval needed: ops/lookup"
    await bot.click(APPROVE, value, user=ALICE, channel="C0SEC")  # the agent's approver
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    await bot.click(APPROVE, value, user=BOB, channel="C0SEC")
    assert (await bot.finished()).startswith("Finished: db1 found")
    assert LOOKED_UP == [{"host": "db1"}]
