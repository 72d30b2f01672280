"""Who may decide an agent's interrupts, where they are asked, and for how long.

Declared in Python next to the agents, per agent with per-tool overrides::

    AgentSpec(
        name="cleanup",
        build=make_cleanup_agent,
        policy=Policy(channel="C0123", users=("U1", "U2"), expires_after=timedelta(hours=4)),
        tools={"delete_files": Policy(channel="C0123", groups=("S9",), dangerous=True)},
    )

A policy must say who decides (users, groups, or ``anyone_in_channel`` explicitly): one
nobody could satisfy is refused when it is declared, not discovered when an interrupt
waits forever. ``dm=True`` messages its users, at most 8 (Slack's group DM limit).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Literal

from agent_runtime.interrupts import DECISION_TYPES, DecisionType, Remember
from agent_runtime.runnable import Runnable
from agent_runtime.session import SessionStore
from bot.errors import PolicyError
from storage.approvers import MAX_UNDO_WINDOW
from storage.sessions import SESSION_TTL

_CHANNEL = re.compile(r"^[CGD][A-Z0-9]{2,20}$")
_USER = re.compile(r"^[UW][A-Z0-9]{2,20}$")
_GROUP = re.compile(r"^S[A-Z0-9]{2,20}$")
_STARTER = re.compile(r"^[UWS][A-Z0-9]{2,20}$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

MAX_DM_USERS = 8
"""A group DM (``conversations.open`` with several users) holds at most 8 people."""


@dataclass(frozen=True, kw_only=True)
class Escalate:
    """On expiry, ask again elsewhere for ``expires_after``: a card in ``channel`` (or the
    same thread), decidable by ``users``, ``groups`` and, with ``anyone_in_channel``, every
    member of that channel, as well as by the first approvers."""

    channel: str | None = None
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    anyone_in_channel: bool = False
    expires_after: timedelta = timedelta(hours=4)


ExpiryOutcome = Literal["deny"] | Escalate | tuple[Escalate, ...]
"""Deny; or escalate, once or up a ladder of steps (each when the one before runs out)."""


@dataclass(frozen=True, kw_only=True)
class Reminders:
    """Remind approvers who have not acted every ``every``, only in their working hours."""

    every: timedelta = timedelta(hours=1)
    start_hour: int = 9
    end_hour: int = 18
    limit: int = 3


@dataclass(frozen=True, kw_only=True)
class Policy:
    """The approval rules for an agent, or for one of its tools."""

    channel: str | None = None
    dm: bool = False
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    anyone_in_channel: bool = False
    min_approvals: int = 1
    self_approval: bool = False
    expires_after: timedelta = timedelta(hours=24)
    """How long the card waits; at most 30 days with the escalations, as a run's state is
    kept no longer (there is no "never": the request would vanish, unanswered, then)."""
    on_expiry: ExpiryOutcome = "deny"
    reminders: Reminders | None = field(default_factory=Reminders)
    decisions: tuple[DecisionType, ...] = DECISION_TYPES
    trust: Remember | None = None
    dangerous: bool = False
    undo_window: timedelta | None = None
    """After the deciding click, how long anyone who may decide can still Undo it; the
    decision is final, and the run goes on, only when the window ends."""
    if_nobody_decides: Literal["deny", "approve"] = "deny"
    """The safe default once the time (and any escalation) runs out, stated on the card:
    denied, or, only when said explicitly and never for a dangerous action, approved."""
    batch: bool = False
    """Calls of this tool that stop a run together share one card: items to untick, then
    "Approve selected" (the unticked ones are denied) or "Deny all"."""

    def __post_init__(self) -> None:
        _check_ids(self.users, _USER, "users", "a user id such as U0123ABCD")
        _check_ids(self.groups, _GROUP, "groups", "a user group id such as S0123ABCD")
        if self.channel is not None and not _CHANNEL.match(self.channel):
            raise PolicyError(f"channel {self.channel!r}: use a channel id such as C0123ABCD")
        if self.dm and self.channel is not None:
            raise PolicyError("choose a channel or dm=True, not both")
        if self.dm and self.anyone_in_channel:
            raise PolicyError("anyone_in_channel needs a channel, not dm=True")
        if not self.users and not self.groups and not self.anyone_in_channel:
            raise PolicyError(
                "nobody may decide under this policy: set users=(...) or groups=(...), "
                "or anyone_in_channel=True to let any member of the channel decide"
            )
        if self.dm and not self.users:
            raise PolicyError("dm=True needs users to message (groups are not expanded for DMs)")
        if self.dm and len(self.users) > MAX_DM_USERS:
            raise PolicyError(
                f"dm=True with {len(self.users)} users: a group DM holds at most "
                f"{MAX_DM_USERS} people; name at most {MAX_DM_USERS} users, or post to a "
                "channel instead (channel=..., users=... or groups=...)"
            )
        if self.min_approvals < 1:
            raise PolicyError(f"min_approvals must be at least 1, got {self.min_approvals}")
        named = len(self.users) if not self.groups and not self.anyone_in_channel else None
        if named is not None and self.min_approvals > max(named, 1):
            raise PolicyError(
                f"min_approvals={self.min_approvals} but only {named} users may approve"
            )
        if not self.decisions or any(d not in DECISION_TYPES for d in self.decisions):
            raise PolicyError(f"decisions must be a non-empty subset of {DECISION_TYPES}")
        if self.min_approvals > 1 and not {"approve", "reject"} & set(self.decisions):
            raise PolicyError(
                f"min_approvals={self.min_approvals}: a quorum approves or denies the call as "
                "shown (one person's edit or reply would end it alone), so its cards offer "
                f"only approve and reject, and decisions={self.decisions!r} has neither"
            )
        if self.trust is not None and "approve" not in self.decisions:
            raise PolicyError("trust needs 'approve' among the decisions")
        if self.trust is not None and self.trust.scope == "thread":
            raise PolicyError(
                "trust scope 'thread' would never cover a later run (each run started from "
                "Slack has its own thread): use Remember(scope='run') or "
                "Remember(scope='minutes', minutes=...) (this tool, in this channel)"
            )
        if self.expires_after is None:
            raise PolicyError(
                f"expires_after=None is refused: a waiting run's state is kept "
                f"{SESSION_TTL.days} days, then the request would vanish unanswered; give a "
                "duration (e.g. timedelta(days=7))"
            )
        if self.expires_after <= timedelta(0):
            raise PolicyError("expires_after must be positive")
        if self.undo_window is not None and not (
            timedelta(0) < self.undo_window <= MAX_UNDO_WINDOW
        ):
            raise PolicyError(
                "undo_window must be positive and at most an hour (e.g. timedelta(seconds=60))"
            )
        if self.if_nobody_decides == "approve" and self.dangerous:
            raise PolicyError("a dangerous action is never approved by default: keep 'deny'")
        if self.batch and self.escalations:
            raise PolicyError("batch=True cards are not escalated: use on_expiry='deny'")
        if self.batch and self.undo_window is not None:
            raise PolicyError("batch=True cards have no undo window: leave undo_window unset")
        if self.on_expiry != "deny" and not self.escalations:
            raise PolicyError("on_expiry: use 'deny', Escalate(...) or a tuple of Escalate steps")
        waits = [self.expires_after, *(e.expires_after for e in self.escalations)]
        if sum(waits, timedelta(0)) > SESSION_TTL:
            raise PolicyError(
                f"expires_after and the escalations' add up to more than {SESSION_TTL.days} "
                "days: a run's saved state is kept that long, so a later approval would "
                "find nothing to resume"
            )
        for esc in self.escalations:
            if esc.expires_after <= timedelta(0):
                raise PolicyError("Escalate expires_after must be positive")
            if not esc.users and not esc.groups and not esc.anyone_in_channel:
                raise PolicyError(
                    "Escalate names nobody new who may decide: give users=(...) or "
                    "groups=(...), or anyone_in_channel=True for every member of its channel"
                )
            if esc.anyone_in_channel and esc.channel is None and self.dm:
                raise PolicyError("Escalate(anyone_in_channel=True) needs a channel to open")
            if esc.channel is not None and not _CHANNEL.match(esc.channel):
                raise PolicyError(f"Escalate channel {esc.channel!r}: use a channel id")
            _check_ids(esc.users, _USER, "Escalate users", "a user id")
            _check_ids(esc.groups, _GROUP, "Escalate groups", "a user group id")
        if self.reminders is not None:
            r = self.reminders
            if not (0 <= r.start_hour < r.end_hour <= 24):
                raise PolicyError("Reminders: need 0 <= start_hour < end_hour <= 24")
            if r.every < timedelta(minutes=1) or r.limit < 0:
                raise PolicyError("Reminders: every must be at least a minute, limit >= 0")

    @property
    def escalations(self) -> tuple[Escalate, ...]:
        """The escalation ladder's steps, in order; () when expiry denies."""
        if isinstance(self.on_expiry, Escalate):
            return (self.on_expiry,)
        if isinstance(self.on_expiry, tuple):
            return tuple(e for e in self.on_expiry if isinstance(e, Escalate))
        return ()

    @property
    def trust_label(self) -> str | None:
        """How the "Approve and trust" button names its scope, or None when not offered."""
        if self.trust is None:
            return None
        if self.trust.scope == "minutes":
            what = "these arguments" if self.trust.same_args else "this tool"
            return f"{what} for {self.trust.minutes} min"
        return "these arguments for this run" if self.trust.same_args else "for this run"

    def offers(
        self, allowed: tuple[DecisionType, ...], *, editable: bool = True
    ) -> tuple[DecisionType, ...]:
        """The decisions a card offers for a call that allows ``allowed`` (any, when empty):
        this policy's that the call allows, Edit only with arguments to edit, and only
        Approve and Deny for a quorum (one person's edit or reply would end it alone).
        Empty when none is left: no button of such a card could work."""
        decisions = tuple(d for d in self.decisions if d in (allowed or self.decisions))
        if not editable:
            decisions = tuple(d for d in decisions if d != "edit")
        if self.min_approvals > 1:
            decisions = tuple(d for d in decisions if d in ("approve", "reject"))
        return decisions

    def offers_none(self, tool: str, allowed: tuple[DecisionType, ...]) -> str:
        """Why a card asking about ``tool``, which allows ``allowed``, offers no decision
        under this policy (``offers`` is empty)."""
        said = (
            f"{tool} allows {', '.join(allowed or self.decisions)}, and its policy offers "
            f"{', '.join(self.decisions)}"
        )
        if not any(d in (allowed or self.decisions) for d in self.decisions):
            return f"{said}: none of them"
        if self.min_approvals > 1:
            quorum = f"a quorum (min_approvals={self.min_approvals})"
            return f"{said}, with {quorum} taking only approve or reject"
        return f"{said}, and an edit needs arguments this approval does not have"

    def with_channel(self, channel: str | None) -> Policy:
        """This policy, posting to ``channel`` when it names none itself."""
        if self.channel is not None or self.dm or channel is None:
            return self
        return replace(self, channel=channel)


AgentFactory = Callable[[SessionStore], Runnable]
"""Builds an Agent or a Workflow over the bot's session store, so any bot process can
resume its runs."""


@dataclass(frozen=True, kw_only=True)
class AgentSpec:
    """An agent the bot can run: how to build it over a session store, and its policies."""

    name: str
    build: AgentFactory
    policy: Policy
    tools: Mapping[str, Policy] = field(default_factory=dict)
    description: str = ""
    started_by: tuple[str, ...] = ()
    """Who may start it from Slack (user or user group ids); empty: anyone in the workspace."""

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise PolicyError(f"agent name {self.name!r}: use letters, digits, '_', '.', '-'")
        where = f"agent {self.name!r}: started_by"
        _check_ids(self.started_by, _STARTER, where, "a user or user group id")
        object.__setattr__(self, "tools", dict(self.tools))

    @property
    def starter_groups(self) -> tuple[str, ...]:
        return tuple(s for s in self.started_by if s.startswith("S"))

    def starts_freely(self, user: str) -> bool:
        """True when ``user`` may start this agent without looking up group members."""
        return not self.started_by or user in self.started_by

    def asks_where_it_runs(self, default_channel: str | None) -> bool:
        """Whether one of its policies posts cards in the channel the run started in: it
        names no channel, is not ``dm=True``, and there is no default (SIGNOFF_CHANNEL)."""
        policies = (self.policy, *self.tools.values())
        return any(p.with_channel(default_channel).channel is None and not p.dm for p in policies)

    def policy_for(self, tool: str | None) -> Policy:
        """The policy of ``tool`` when it has its own, else the agent's."""
        if tool is not None and tool in self.tools:
            return self.tools[tool]
        return self.policy


def is_channel_id(value: str) -> bool:
    """A Slack channel id (``C0123ABCD``; ``G`` private, ``D`` direct), not a ``#name``."""
    return bool(_CHANNEL.match(value))


def _check_ids(values: tuple[str, ...], pattern: re.Pattern[str], what: str, hint: str) -> None:
    if isinstance(values, str):
        raise PolicyError(f"{what} must be a tuple of ids, not the string {values!r}")
    for value in values:
        if not isinstance(value, str) or not pattern.match(value):
            raise PolicyError(f"{what}: {value!r} is not {hint}")
