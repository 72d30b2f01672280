"""An adapted agent's tool (LangChain, Strands, Genkit) gets the Edit form its framework's
JSON schema makes, as Signoff's own tools do: a select for a ``Literal``, a number input
for an ``int``; the form's edit reaches the tool, and one the tool's own schema refuses
is refused with a sentence under its field, nothing decided; the card of a run an AG-UI
app started has the same form (the real packages and npm client, offline, scripted
models). Another LangGraph graph's approval gets its form from the input model given
for it."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypedDict

import pytest
from adapter_scales import POLICY, genkit_spec, langchain_spec, strands_spec
from agui_endpoint import Endpoint, run_client
from harness import ALICE, CAROL, Harness
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.types import interrupt
from pydantic import BaseModel, Field

from agent_runtime import InMemorySessionStore
from agent_runtime.errors import UsageError
from bot.agents.policy import AgentSpec
from bot.ui import ids
from sandbox.blocks import checked_view
from signoff.langgraph import LangGraphAgent

FRAMEWORKS = ["langchain", "strands", "genkit"]


def _spec(
    framework: str, saver: AsyncSqliteSaver, ran: list[dict[str, Any]], *, at_least_one: bool
) -> AgentSpec:
    if framework == "langchain":
        return langchain_spec(saver, ran)
    if framework == "strands":
        return strands_spec(ran, at_least_one=at_least_one)
    return genkit_spec(ran)


async def _inputs(bot: Harness, value: str) -> dict[str, dict[str, Any]]:
    """The Edit modal's input blocks by block id, as Slack takes the modal."""
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = checked_view(bot.slack.called("views.open")[-1]["view"])
    return {b["block_id"]: b for b in view["blocks"] if b["type"] == "input"}


async def _form(bot: Harness, value: str) -> dict[str, dict[str, Any]]:
    """The Edit modal's input elements by block id."""
    return {b: i["element"] for b, i in (await _inputs(bot, value)).items()}


def _picked(value: str) -> dict[str, Any]:
    return {"type": "static_select", "selected_option": {"value": value}}


def _number(text: str) -> dict[str, Any]:
    return {"type": "number_input", "value": text}


async def scale_in_form(bot: Harness, value: str, service: str, replicas: int) -> tuple[int, str]:
    """Alice submits the Edit form of a ``scale`` call: its status and body."""
    values = {"arg.service": _picked(service), "arg.replicas": _number(str(replicas))}
    return await bot.submit_form(value, user=ALICE, values=values)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_edit_modal_is_a_form_of_the_adapted_tools_schema_and_its_edit_runs(
    make_bot: Any, saver: AsyncSqliteSaver, framework: str
) -> None:
    ran: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=_spec(framework, saver, ran, at_least_one=False))
    value = await bot.start(requested_by=CAROL)
    inputs = await _inputs(bot, value)
    # A Strands docstring's description of an argument is its hint; no made-up one is.
    hints = {"arg.service": "The service to scale."} if framework == "strands" else {}
    assert {b: i["hint"]["text"] for b, i in inputs.items() if "hint" in i} == hints
    form = {b: i["element"] for b, i in inputs.items()}
    assert sorted(form) == ["arg.replicas", "arg.service"]
    service, replicas = form["arg.service"], form["arg.replicas"]
    assert service["type"] == "static_select"
    assert [o["value"] for o in service["options"]] == ["api", "web"]
    assert service["initial_option"]["value"] == "api"
    assert replicas["type"] == "number_input" and replicas["is_decimal_allowed"] is False
    assert replicas["initial_value"] == "2"
    status, body = await scale_in_form(bot, value, "web", 5)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"service": "web", "replicas": 5}]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "edited" and record.decision is not None
    assert record.decision["args"] == {"service": "web", "replicas": 5}


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_form_edit_the_adapted_tools_schema_refuses_decides_nothing(
    make_bot: Any, saver: AsyncSqliteSaver, framework: str
) -> None:
    ran: list[dict[str, Any]] = []
    bot: Harness = await make_bot(spec=_spec(framework, saver, ran, at_least_one=True))
    value = await bot.start(requested_by=CAROL)
    await _form(bot, value)
    status, body = await scale_in_form(bot, value, "web", 0)
    assert status == 200
    said = {
        "langchain": "This should be greater than or equal to 1.",  # pydantic's, as ours
        "genkit": "This should be greater than or equal to 1.",
        "strands": "0 is less than the minimum of 1.",  # jsonschema's
    }[framework]
    assert json.loads(body)["errors"] == {"arg.replicas": said}
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    status, body = await scale_in_form(bot, value, "web", 3)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"service": "web", "replicas": 3}]


async def test_the_card_of_a_run_an_agui_app_started_has_the_form_and_its_edit_runs(
    endpoint_for: Callable[..., Awaitable[Endpoint]],
) -> None:
    ran: list[dict[str, Any]] = []
    spec = strands_spec(ran)
    endpoint = await endpoint_for(spec=spec)
    url = endpoint.url.replace("/cleanup", f"/{spec.name}")
    [first] = await run_client(url, "thread-form", [{"prompt": "scale the api"}])
    assert first["finished"]["outcome"]["type"] == "interrupt", first
    bot = endpoint.bot
    value = bot.posted(0)["blocks"][-1]["elements"][0]["value"]
    form = await _form(bot, value)
    assert form["arg.service"]["type"] == "static_select"
    assert form["arg.replicas"]["type"] == "number_input"
    status, body = await scale_in_form(bot, value, "web", 4)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert ran == [{"service": "web", "replicas": 4}]


class _Asking(TypedDict, total=False):
    request: str


def _asks(state: _Asking) -> _Asking:
    interrupt({"type": "tool_approval", "name": "delete_files", "args": {"paths": ["/tmp/a"]}})
    return {}


def test_another_graphs_approval_has_no_schema_so_its_arguments_are_json() -> None:
    """A graph that is not a LangChain agent names in its approvals what its nodes like:
    nothing ties one to a tool of its ``ToolNode``, so no tool's schema makes its form."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return "deleted"

    builder = StateGraph(_Asking)
    builder.add_node("ask", _asks)
    builder.add_node("run", ToolNode([delete_files]))
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    graph = LangGraphAgent(builder.compile(checkpointer=InMemorySaver()), input=lambda t: {})
    assert graph.some_tool_names() == {"delete_files"}
    assert graph.tool_schema("delete_files") is None


class _Scale(BaseModel):
    service: Literal["api", "web"]
    replicas: int = Field(ge=1)


def _approving_graph(saver: AsyncSqliteSaver, answers: list[Any]) -> AgentSpec:
    """A graph that is not a LangChain agent, asking approval of a ``scale`` it names, with
    an input model for it; what the approval was answered, as the node got it."""

    def asks(state: _Asking) -> _Asking:
        args = {"service": "api", "replicas": 2}
        answers.append(interrupt({"type": "tool_approval", "name": "scale", "args": args}))
        return {}

    builder = StateGraph(_Asking)
    builder.add_node("ask", asks)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", END)
    return AgentSpec(
        name="lg-approval",
        build=lambda sessions: LangGraphAgent(
            builder.compile(checkpointer=saver),
            input=lambda text: {"request": text},
            session_store=sessions,
            input_models={"scale": _Scale},
        ),
        policy=POLICY,
    )


async def test_another_graphs_approval_with_an_input_model_is_edited_in_its_form(
    make_bot: Any, saver: AsyncSqliteSaver
) -> None:
    answers: list[Any] = []
    spec = _approving_graph(saver, answers)
    graph = spec.build(InMemorySessionStore())
    assert isinstance(graph, LangGraphAgent) and graph.some_tool_names() == {"scale"}
    bot: Harness = await make_bot(spec=spec)
    value = await bot.start(requested_by=CAROL)
    form = await _form(bot, value)
    assert sorted(form) == ["arg.replicas", "arg.service"]
    assert form["arg.service"]["type"] == "static_select"
    assert form["arg.replicas"]["initial_value"] == "2"
    status, body = await scale_in_form(bot, value, "web", 0)
    assert status == 200
    assert json.loads(body)["errors"] == {
        "arg.replicas": "This should be greater than or equal to 1."
    }
    status, body = await scale_in_form(bot, value, "web", 4)
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    edited = {"name": "scale", "args": {"service": "web", "replicas": 4}}
    assert answers == [{"type": "edit", "edited_action": edited}]


def test_an_input_model_for_a_langchain_agents_own_tool_or_not_a_model_stops_the_build(
    saver: AsyncSqliteSaver,
) -> None:
    agent = langchain_spec(saver, []).build(InMemorySessionStore())
    assert isinstance(agent, LangGraphAgent)
    with pytest.raises(UsageError, match="is a tool of this LangChain agent"):
        LangGraphAgent(agent.graph, input=lambda t: {}, input_models={"scale": _Scale})
    with pytest.raises(UsageError, match="must be a pydantic model class"):
        LangGraphAgent(agent.graph, input=lambda t: {}, input_models={"scale": dict})  # type: ignore[dict-item]
