"""A policy that offers none of the decisions a call allows (none in common, or a quorum
left with only Edit or Reply) is refused where it can be known, as the agent is built; an
adapted framework's gate, which tells what it allows only as it asks, ends its run
instead of posting a card none of whose buttons could work (before, the card offered
Approve and Deny anyway: an Approve was recorded and shown as approved, and the resume
refused it until it was given up)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agui_endpoint import Endpoint, run_raw
from harness import ALICE, BOB, CAROL, CHANNEL, Harness, ToolLog, cleanup_spec
from langchain.agents import create_agent
from langchain.agents.middleware import HumanInTheLoopMiddleware
from langchain_core.messages import AIMessage
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph_agents import ScriptedChatModel, posted_cards

from agent_runtime import DecisionType
from agent_runtime.errors import UsageError
from agent_runtime.session import InMemorySessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from bot.errors import PolicyError
from bot.runs.drive import start_run
from bot.runs.place import Place
from signoff.langgraph import LangGraphAgent

APPROVE_OR_DENY = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
QUORUM = Policy(channel=CHANNEL, users=(ALICE, BOB), min_approvals=2)
UNDECIDABLE = [
    (
        APPROVE_OR_DENY,
        ("edit",),
        "allows edit, and its policy offers approve, reject: none of them",
    ),
    (
        QUORUM,
        ("edit", "respond"),
        "allows edit, respond, and its policy offers approve, edit, reject, respond, with a "
        "quorum (min_approvals=2) taking only approve or reject",
    ),
]


def test_a_quorum_whose_policy_offers_neither_approve_nor_deny_is_refused() -> None:
    with pytest.raises(PolicyError, match="a quorum approves or denies the call as shown"):
        Policy(users=(ALICE, BOB), min_approvals=2, decisions=("edit", "respond"))


@pytest.mark.parametrize(("policy", "allowed", "why"), UNDECIDABLE, ids=["none_shared", "quorum"])
def test_an_agent_whose_policy_offers_none_of_what_a_tool_allows_is_refused_as_built(
    policy: Policy, allowed: tuple[DecisionType, ...], why: str
) -> None:
    spec = cleanup_spec(ToolLog(), policy, decisions=allowed)
    registry = Registry([spec], sessions=InMemorySessionStore())
    with pytest.raises(UsageError) as refused:
        registry.agent("cleanup")
    assert str(refused.value) == (
        f"agent 'cleanup': delete_files {why}, so no card asking about it could be decided; "
        "offer one it allows (Policy(decisions=...), or its own policy in "
        "AgentSpec(tools=...)), or allow more where the agent asks (allowed_decisions)"
    )


def _gated(
    saver: AsyncSqliteSaver, allowed: tuple[DecisionType, ...], policy: Policy, ran: list[Any]
) -> AgentSpec:
    """A LangChain agent whose gate lets approvers answer ``delete_files`` only ``allowed``."""

    @lc_tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        ran.append(paths)
        return f"deleted {len(paths)}"

    calls = [{"id": "c1", "name": "delete_files", "args": {"paths": ["/tmp/a"]}}]
    model = ScriptedChatModel(
        messages=iter([AIMessage(content="", tool_calls=calls), AIMessage(content="kept")])
    )
    gate = HumanInTheLoopMiddleware(
        interrupt_on={"delete_files": {"allowed_decisions": list(allowed)}}
    )
    graph = create_agent(model, tools=[delete_files], middleware=[gate], checkpointer=saver)
    return AgentSpec(
        name="lc-gated",
        build=lambda sessions: LangGraphAgent(
            graph,
            input=lambda text: {"messages": [{"role": "user", "content": text}]},
            output=lambda values: str(values["messages"][-1].content),
            session_store=sessions,
        ),
        policy=policy,
    )


@pytest.mark.parametrize(("policy", "allowed", "why"), UNDECIDABLE, ids=["none_shared", "quorum"])
async def test_a_gate_allowing_nothing_its_policy_offers_ends_the_run_with_no_card(
    make_bot: Any,
    saver: AsyncSqliteSaver,
    policy: Policy,
    allowed: tuple[DecisionType, ...],
    why: str,
) -> None:
    """The requester is told what is wrong, nothing ran, and the thread takes a prompt."""
    ran: list[Any] = []
    bot: Harness = await make_bot(spec=_gated(saver, allowed, policy, ran))
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    stopped = await start_run(bot.services, "lc-gated", "clean up", place=place)
    [told] = [str(p["text"]) for p in bot.slack.called("chat.postMessage")]
    assert told == (
        f"Stopped (cancelled): not asked: delete_files {why}, so no card of agent lc-gated "
        "could decide it, and the call did not run; its policy (Policy(decisions=...), or one "
        "of its own in AgentSpec(tools=...)) must offer a decision the call allows\n"
        f"cc <@{CAROL}>"
    )
    assert posted_cards(bot) == [] and ran == []
    assert await bot.services.storage.queries.pending_for_run(stopped.run_id) == []
    agent = bot.services.registry.agent("lc-gated")
    status = await agent.thread_status(stopped.thread_id)
    assert status is not None and status.status == "idle"


async def test_an_apps_run_whose_gate_allows_nothing_its_policy_offers_ends_in_a_run_error(
    endpoint_for: Callable[..., Awaitable[Endpoint]], saver: AsyncSqliteSaver
) -> None:
    """The app is told why, not offered an interrupt of a run that was ended."""
    ran: list[Any] = []
    policy, allowed, why = UNDECIDABLE[0]
    endpoint = await endpoint_for(spec=_gated(saver, allowed, policy, ran))
    endpoint.url = endpoint.url.replace("/cleanup", "/lc-gated")
    body = {
        "threadId": "thread-undecidable",
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "clean up"}],
    }
    events = await run_raw(endpoint, body)
    assert "RUN_FINISHED" not in [e["type"] for e in events]
    assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "cancelled"
    assert events[-1]["message"].startswith(f"not asked: delete_files {why}, so no card")
    assert posted_cards(endpoint.bot) == [] and ran == []
