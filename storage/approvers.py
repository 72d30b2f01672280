"""Who may decide an interrupt, as storage enforces it: the allow lists, the quorum, the
escalation ladder, reminders in working hours and the safe default when time runs out.
The Lua scripts read it from each record's ``policy`` field."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent_runtime.interrupts import DecisionType

from .ids import check_id

_MODEL = ConfigDict(frozen=True, extra="forbid", ser_json_timedelta="float")


class Rung(BaseModel):
    """One step of the escalation ladder: who is asked (and where) once the step before
    it ran out of time, and for how long before the next step."""

    model_config = _MODEL

    channel: str | None = None
    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    group_members: tuple[str, ...] = ()
    """The members of ``groups`` as Slack last listed them (checked like the policy's)."""
    open_to_channel: bool = False
    expires_in: timedelta | None = None

    @property
    def deciders(self) -> tuple[str, ...]:
        """Everyone the step names: its users and its groups' members as stored."""
        return tuple(dict.fromkeys(self.users + self.group_members))


MAX_UNDO_WINDOW = timedelta(hours=1)
"""Longer than this, an undo window is a delay: the request would look decided for hours."""


class ApproverPolicy(BaseModel):
    """Who may decide an interrupt, how many must agree, and what happens when time runs out.

    An empty allow list means nobody may decide, unless ``open_to_channel`` is set (fail
    closed). ``group_members`` holds the member ids of ``allowed_groups`` as captured when
    the interrupt was posted. Reminder offsets count from the interrupt's creation; a
    reminder reaches an approver only between ``work_start_hour`` and ``work_end_hour``
    on their own clock (records stored before these fields existed read as 9 to 18).
    """

    model_config = _MODEL

    allowed_users: tuple[str, ...] = ()
    allowed_groups: tuple[str, ...] = ()
    group_members: tuple[str, ...] = ()
    open_to_channel: bool = False
    min_approvals: int = Field(default=1, ge=1, le=100)
    allow_self_approval: bool = False
    expires_in: timedelta | None = None
    on_expiry: Literal["deny", "escalate"] = "deny"
    escalate_to_channel: str | None = None
    escalate_to_users: tuple[str, ...] = ()
    escalate_to_groups: tuple[str, ...] = ()
    escalate_group_members: tuple[str, ...] = ()
    escalate_open_to_channel: bool = False
    """Once escalated, every member of the escalation card's channel may decide."""
    escalate_expires_in: timedelta | None = None
    """How long the first escalation waits before the next step (None: ``expires_in``)."""
    ladder: tuple[Rung, ...] = ()
    """The steps after the first escalation, in order."""
    reminders: tuple[timedelta, ...] = ()
    work_start_hour: int = Field(default=9, ge=0, le=23)
    work_end_hour: int = Field(default=18, ge=1, le=24)
    decisions: tuple[DecisionType, ...] = ("approve", "reject")
    free_text_answers: bool = True
    """Whether a question with options may also be answered in the approver's own words."""
    dangerous: bool = False
    undo_window: timedelta | None = None
    """How long a deciding click waits, undoable, before it is final and the run resumes."""
    stand_ins: tuple[tuple[str, str], ...] = ()
    """``(delegate, for_user)``: who decides in place of an approver who is away. A named
    user's delegate is among ``allowed_users``; a group member's decides only while that
    member is among ``group_members``."""
    if_nobody_decides: Literal["deny", "approve"] = "deny"
    """The safe default when the time (and any escalation) runs out: denied, or approved
    for a low-risk action whose policy says so explicitly."""

    @property
    def deciders(self) -> tuple[str, ...]:
        """Everyone named who may decide: the users, the groups' members as stored, and
        the delegates standing in for those members."""
        members = set(self.group_members)
        delegates = tuple(d for d, for_user in self.stand_ins if for_user in members)
        return tuple(dict.fromkeys(self.allowed_users + self.group_members + delegates))

    @field_validator(
        "allowed_users",
        "allowed_groups",
        "group_members",
        "escalate_to_users",
        "escalate_to_groups",
        "escalate_group_members",
    )
    @classmethod
    def _ids(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(check_id("user or group", v) for v in value))

    @property
    def groups_everywhere(self) -> tuple[tuple[str, ...], ...]:
        """The user groups of the policy and then of each escalation step: what a check of
        the groups' members looks at."""
        return (self.allowed_groups, *(rung.groups for rung in self.rungs))

    def with_members(self, members: Sequence[Sequence[str]]) -> ApproverPolicy:
        """This policy with the groups' members replaced, in ``groups_everywhere`` order."""
        first, *steps = (tuple(m) for m in members)
        rungs = [
            r.model_copy(update={"group_members": m})
            for r, m in zip(self.rungs, steps, strict=True)
        ]
        update: dict[str, object] = {"group_members": first}
        if rungs:
            update |= {"escalate_group_members": rungs[0].group_members, "ladder": tuple(rungs[1:])}
        return self.model_copy(update=update)

    @property
    def rungs(self) -> tuple[Rung, ...]:
        """Every step of the escalation ladder, the first escalation first; () without."""
        if self.on_expiry != "escalate":
            return ()
        first = Rung(
            channel=self.escalate_to_channel,
            users=self.escalate_to_users,
            groups=self.escalate_to_groups,
            group_members=self.escalate_group_members,
            open_to_channel=self.escalate_open_to_channel,
            expires_in=self.escalate_expires_in or self.expires_in,
        )
        return (first, *self.ladder)

    @field_validator("reminders")
    @classmethod
    def _sorted(cls, value: tuple[timedelta, ...]) -> tuple[timedelta, ...]:
        if any(offset <= timedelta(0) for offset in value):
            raise ValueError("reminder offsets must be positive")
        return tuple(sorted(value))

    @model_validator(mode="after")
    def _escalation(self) -> Self:
        if self.on_expiry == "escalate":
            if self.expires_in is None:
                raise ValueError("on_expiry='escalate' needs expires_in")
            if not (
                self.escalate_to_users or self.escalate_to_groups or self.escalate_open_to_channel
            ):
                raise ValueError(
                    "on_expiry='escalate' needs escalate_to_users, _to_groups or _open_to_channel"
                )
        if self.expires_in is not None and self.expires_in <= timedelta(0):
            raise ValueError("expires_in must be positive")
        if self.if_nobody_decides == "approve" and self.dangerous:
            raise ValueError("a dangerous action is never approved by default")
        if self.undo_window is not None and not (
            timedelta(0) < self.undo_window <= MAX_UNDO_WINDOW
        ):
            raise ValueError("undo_window must be positive and at most an hour")
        if not self.decisions:
            raise ValueError("offer at least one decision")
        if self.work_start_hour >= self.work_end_hour:
            raise ValueError("work_start_hour must come before work_end_hour")
        return self
