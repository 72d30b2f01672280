"""A malformed ``interrupt_on`` (or ``interrupt_before``) stops the agent's construction,
naming the entry and what it may be, instead of failing or being ignored at first use."""

import pytest

from agent_runtime import Agent, ScriptedModel, UsageError, tool
from agent_runtime.policy import ApprovalRule
from agent_runtime.workflow import NodeContext, Workflow


@tool
def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


@tool
def list_files() -> list[str]:
    """List files."""
    return ["a.log"]


def mailer(interrupt_on: object) -> Agent:
    return Agent(
        model=ScriptedModel(["done"]),
        tools=[send_email, list_files],
        interrupt_on=interrupt_on,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("interrupt_on", "said"),
    [
        (
            {"send_mail": True},
            "interrupt_on names tools this agent lacks: ['send_mail']; "
            "its tools are ['list_files', 'send_email']",
        ),
        (
            {"send_email": {"description": 42}},
            "interrupt_on['send_email']: description must be a str or a function of the call "
            "returning one, got 42",
        ),
        (
            {"send_email": {"precondition": "the outbox"}},
            "interrupt_on['send_email']: precondition must be a function of the call, "
            "got 'the outbox'",
        ),
        (
            {"send_email": {"allowed_decision": ["approve"]}},
            "interrupt_on['send_email']: unknown options ['allowed_decision']; the options are "
            "['allowed_decisions', 'description', 'precondition']",
        ),
        (
            {"send_email": {"allowed_decisions": "approve"}},
            "interrupt_on['send_email']: allowed_decisions must be a non-empty list (in an "
            "ApprovalRule, a tuple) drawn from ['approve', 'edit', 'reject', 'respond'], "
            "got 'approve'",
        ),
        (
            {"send_email": None},
            "interrupt_on['send_email']: use True, False or a dict of options, got None",
        ),
        ({1: True}, "interrupt_on: 1 is not a name (a str)"),
        (["send_email"], "interrupt_on must be a dict of names, got ['send_email']"),
    ],
)
def test_a_bad_interrupt_on_is_refused_when_the_agent_is_built(
    interrupt_on: object, said: str
) -> None:
    with pytest.raises(UsageError) as refused:
        mailer(interrupt_on)
    assert str(refused.value) == said


def test_a_malformed_approval_rule_is_refused_when_made() -> None:
    with pytest.raises(UsageError, match="description must be a str or a function"):
        ApprovalRule(description=42)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="allowed_decisions must be a non-empty list"):
        ApprovalRule(allowed_decisions=())
    with pytest.raises(UsageError, match=r"in an ApprovalRule, a tuple"):
        ApprovalRule(allowed_decisions=["approve"])  # type: ignore[arg-type]


def test_good_entries_still_build() -> None:
    agent = mailer(
        {
            "send_email": {"allowed_decisions": ["approve"], "description": lambda c: c.name},
            "list_files": ApprovalRule(precondition=lambda call: []),
        }
    )
    assert agent.declared_decisions() == {
        "send_email": ("approve",),
        "list_files": ("approve", "edit", "reject", "respond"),
    }


async def node(ctx: NodeContext) -> None:
    return None


@pytest.mark.parametrize(
    ("interrupt_before", "said"),
    [
        (
            {"delete": True},
            "interrupt_before names nodes this workflow lacks: ['delete']; "
            "its nodes are ['inspect', 'report']",
        ),
        (
            {"inspect": {"description": ["x"]}},
            "interrupt_before['inspect']: description must be a str or a function of the call "
            "returning one, got ['x']",
        ),
    ],
)
def test_a_bad_interrupt_before_is_refused_when_the_workflow_is_built(
    interrupt_before: object, said: str
) -> None:
    with pytest.raises(UsageError) as refused:
        Workflow(
            nodes={"inspect": node, "report": node},
            interrupt_before=interrupt_before,  # type: ignore[arg-type]
        )
    assert str(refused.value) == said
