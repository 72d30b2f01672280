"""The policy declaration API refuses inconsistent policies with a clear message."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fakes import OneToolModel

from agent_runtime import Agent, tool
from agent_runtime.errors import UsageError
from agent_runtime.interrupts import Remember
from agent_runtime.session import InMemorySessionStore, SessionStore
from bot.agents.policy import AgentSpec, Escalate, Policy, Reminders
from bot.agents.registry import Registry
from bot.errors import AgentBuildError, PolicyError


def _build(store: object) -> object:
    raise AssertionError("not built in these tests")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"users": ("alice",)}, "users"),
        ({"users": "U123"}, "tuple"),
        ({"groups": ("U123",)}, "groups"),
        ({"channel": "#ops"}, "channel"),
        ({"channel": "C123", "dm": True, "users": ("U1A",)}, "not both"),
        ({}, "nobody may decide.*users=.*groups=.*anyone_in_channel=True"),
        ({"channel": "C123"}, "nobody may decide"),
        ({"dm": True, "groups": ("S0OPS",)}, "needs users"),
        ({"dm": True, "users": tuple(f"U0{i}A" for i in range(9))}, "at most 8"),
        ({"users": ("U1A",), "min_approvals": 2}, "only 1"),
        ({"users": ("U1A",), "min_approvals": 0}, "at least 1"),
        ({"users": ("U1A",), "decisions": ()}, "non-empty"),
        (
            {"users": ("U1A",), "decisions": ("reject",), "trust": Remember(scope="run")},
            "trust",
        ),
        ({"users": ("U1A",), "expires_after": timedelta(0)}, "positive"),
        ({"users": ("U1A",), "on_expiry": Escalate()}, "Escalate"),
        # A batch card's items are never held, so never taken back when a window ends.
        ({"users": ("U1A",), "batch": True, "undo_window": timedelta(seconds=60)}, "no undo"),
        # A channel alone names nobody who could act on the escalation card.
        ({"users": ("U1A",), "on_expiry": Escalate(channel="C0ESC")}, "names nobody new"),
        # "Never" would outlive the run's saved state: the request would vanish unanswered.
        ({"users": ("U1A",), "expires_after": None}, "expires_after=None is refused"),
        ({"users": ("U1A",), "reminders": Reminders(start_hour=18, end_hour=9)}, "start_hour"),
        # Longer than a run's saved state is kept: an approval would find nothing to resume.
        ({"users": ("U1A",), "expires_after": timedelta(days=31)}, "more than 30 days"),
        (
            {
                "users": ("U1A",),
                "expires_after": timedelta(days=20),
                "on_expiry": Escalate(users=("U2B",), expires_after=timedelta(days=15)),
            },
            "more than 30 days",
        ),
    ],
)
def test_inconsistent_policies_are_refused(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(PolicyError, match=match):
        Policy(**kwargs)  # type: ignore[arg-type]


def test_left_out_a_request_is_denied_after_a_day_and_reminds_hourly_in_working_hours() -> None:
    policy = Policy(channel="C0AAA", users=("U1A",))
    assert policy.expires_after == timedelta(hours=24) and policy.on_expiry == "deny"
    assert policy.if_nobody_decides == "deny"
    assert policy.reminders == Reminders(
        every=timedelta(hours=1), start_hour=9, end_hour=18, limit=3
    )
    assert policy.decisions == ("approve", "edit", "reject", "respond")


def test_tool_policy_overrides_the_agents() -> None:
    base = Policy(channel="C0AAA", users=("U1A", "U2B"))
    strict = Policy(channel="C0AAA", groups=("S0OPS",), min_approvals=2, dangerous=True)
    spec = AgentSpec(name="cleanup", build=_build, policy=base, tools={"delete_files": strict})  # type: ignore[arg-type]
    assert spec.policy_for("delete_files") is strict
    assert spec.policy_for("list_files") is base
    assert spec.policy_for(None) is base


def test_default_channel_fills_only_an_unset_channel() -> None:
    assert Policy(users=("U1A",)).with_channel("C0DEF").channel == "C0DEF"
    assert Policy(channel="C0AAA", users=("U1A",)).with_channel("C0DEF").channel == "C0AAA"
    assert Policy(dm=True, users=("U1A",)).with_channel("C0DEF").channel is None


def test_trust_label_names_the_scope() -> None:
    run = Policy(users=("U1A",), trust=Remember(scope="run"))
    assert run.trust_label == "for this run"
    minutes = Policy(users=("U1A",), trust=Remember(scope="minutes", minutes=30))
    assert minutes.trust_label == "this tool for 30 min"
    exact = Remember(scope="minutes", minutes=30, same_args=True)
    assert Policy(users=("U1A",), trust=exact).trust_label == "these arguments for 30 min"
    assert Policy(users=("U1A",)).trust_label is None
    same_run = Remember(scope="run", same_args=True)
    assert Policy(users=("U1A",), trust=same_run).trust_label == "these arguments for this run"
    # A thread is new for every run started from Slack: such trust would never apply.
    with pytest.raises(PolicyError, match="would never cover a later run"):
        Policy(users=("U1A",), trust=Remember(scope="thread"))


def test_a_policy_open_to_the_channel_or_a_group_dm_of_eight_is_accepted() -> None:
    assert Policy(channel="C0AAA", anyone_in_channel=True).anyone_in_channel
    assert len(Policy(dm=True, users=tuple(f"U0{i}A" for i in range(8))).users) == 8


@tool
def send_email(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def _mailer(interrupt_on: dict[str, object]) -> AgentSpec:
    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("send_email", {"to": "ops@example.com"}),
            tools=[send_email],
            interrupt_on=interrupt_on,  # type: ignore[arg-type]
            session_store=store,
        )

    return AgentSpec(name="mailer", build=build, policy=Policy(users=("U1A",)))


@pytest.mark.parametrize(
    ("interrupt_on", "said"),
    [
        ({"send_email": {"allowed_decisions": ["approve", "maybe"]}}, "allowed_decisions must"),
        ({"send_email": "yes"}, "use True, False or a dict of options"),
        ({"send_mail": True}, "interrupt_on names tools this agent lacks: ['send_mail']"),
    ],
)
def test_a_bad_interrupt_on_is_refused_naming_the_agent(
    interrupt_on: dict[str, object], said: str
) -> None:
    """With several agents, the runtime's message alone does not say whose policy is wrong."""
    good = _mailer({"send_email": True})
    registry = Registry(
        [AgentSpec(name="notify", build=good.build, policy=good.policy), _mailer(interrupt_on)],
        sessions=InMemorySessionStore(),
    )
    assert isinstance(registry.agent("notify"), Agent)
    with pytest.raises(UsageError) as refused:
        registry.agent("mailer")
    assert str(refused.value).startswith("agent 'mailer': interrupt_on")
    assert said in str(refused.value)


def test_an_agent_is_built_once_and_serves_every_run() -> None:
    """The README's warning holds: what ``build`` returns is shared by all runs of a process."""
    builds: list[SessionStore] = []
    spec = _mailer({"send_email": True})

    def counting_build(store: SessionStore) -> Agent:
        builds.append(store)
        return spec.build(store)

    registry = Registry(
        [AgentSpec(name="mailer", build=counting_build, policy=spec.policy)],
        sessions=InMemorySessionStore(),
    )
    assert registry.agent("mailer") is registry.agent("mailer")
    assert len(builds) == 1


def test_an_agent_whose_build_failed_is_built_again_when_next_used() -> None:
    """A build that failed (an API key not set yet) is not kept as failed: the next run
    that needs the agent builds it again, and once it builds it serves every run."""
    spec = _mailer({"send_email": True})
    key: list[str] = []

    def build_with_key(store: SessionStore) -> Agent:
        if not key:
            raise ValueError("no API key")
        return spec.build(store)

    registry = Registry(
        [AgentSpec(name="mailer", build=build_with_key, policy=spec.policy)],
        sessions=InMemorySessionStore(),
    )
    with pytest.raises(AgentBuildError, match="agent 'mailer': build\\(\\) raised ValueError"):
        registry.agent("mailer")
    key.append("sk-set-later")
    assert isinstance(registry.agent("mailer"), Agent)
    assert registry.agent("mailer") is registry.agent("mailer")
