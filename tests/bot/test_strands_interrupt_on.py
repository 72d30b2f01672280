"""``SignoffApprovals`` on the real strands-agents SDK: a bad ``interrupt_on`` stops the
build of the agent, naming the entry, instead of leaving a misspelt tool unguarded."""

from __future__ import annotations

import pytest
from strands import Agent, tool
from strands_agents import ScriptedModel

from agent_runtime.errors import UsageError
from agent_runtime.session import InMemorySessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.agents.registry import Registry
from signoff.strands import SignoffApprovals, StrandsAgent

LACKS = "interrupt_on names tools this agent lacks: ['delete_file']; its tools are ['delete_files']"


@tool
def delete_files(paths: list[str]) -> str:
    """Delete files."""
    return f"deleted {len(paths)}"


def guarded(interrupt_on: dict[str, bool]) -> Agent:
    return Agent(
        model=ScriptedModel("delete_files", {"paths": ["/tmp/a"]}),
        tools=[delete_files],
        hooks=[SignoffApprovals(interrupt_on=interrupt_on)],
        callback_handler=None,
    )


def test_a_guarded_name_the_agent_has_no_tool_of_fails_its_construction() -> None:
    with pytest.raises(UsageError) as refused:
        guarded({"delete_file": True})
    assert str(refused.value) == LACKS
    assert guarded({"delete_files": True, "delete_file": False}).tool_names == ["delete_files"]


def test_a_value_other_than_true_or_false_is_refused() -> None:
    with pytest.raises(UsageError) as refused:
        SignoffApprovals(interrupt_on={"delete_files": {"allowed_decisions": ["approve"]}})  # type: ignore[dict-item]
    assert str(refused.value) == (
        "interrupt_on['delete_files']: use True or False, got {'allowed_decisions': ['approve']}"
    )


def test_the_signoff_agent_fails_to_build_not_its_first_run() -> None:
    """``make_agent`` runs per invocation; the adapter builds it once up front, so the
    registry refuses the agent (naming it) before any run starts."""
    spec = AgentSpec(
        name="st-cleanup",
        policy=Policy(users=("U0ALICE",)),
        build=lambda sessions: StrandsAgent(
            lambda: guarded({"delete_file": True}), session_store=sessions
        ),
    )
    registry = Registry([spec], sessions=InMemorySessionStore())
    with pytest.raises(UsageError) as refused:
        registry.agent("st-cleanup")
    assert str(refused.value) == f"agent 'st-cleanup': {LACKS}"
