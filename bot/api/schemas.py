"""The requests API's bodies, as pydantic models: the server validates with them, the
OpenAPI document is generated from them, and ``signoff.Client`` sends and reads them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator
from pydantic_core import ErrorDetails

from agent_runtime.closed_model import ClosedModel
from storage.requests import Param, ParamValue

_ID = r"^[A-Za-z0-9_.:\-]{1,128}$"
_CHANNEL = r"^[CGD][A-Z0-9]{2,20}$"
Approver = Annotated[str, Field(pattern=r"^([UWS][A-Z0-9]{2,20}|@[a-z0-9][a-z0-9._\-]{0,79})$")]
"""A user id (U…, W…), a user group id (S…) or a user group's handle (@oncall)."""

RequestStatusName = Literal[
    "pending", "approved", "denied", "edited", "responded", "expired", "withdrawn", "lost"
]
FINAL_STATUSES: frozenset[str] = frozenset(
    {"approved", "denied", "edited", "responded", "expired", "withdrawn", "lost"}
)
"""``lost``: Redis lost its record (or an item's) while it waited, so it can no longer be
decided."""
APPROVED_STATUSES: frozenset[str] = frozenset({"approved", "edited", "responded"})
"""The statuses in which the job may go ahead (a reply answers it, when allowed)."""

_BODY = ConfigDict(frozen=True)


def _one_line(value: str) -> str:
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError("an item is one line: no newline or other control character")
    return value


Item = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_one_line)]
"""One of a request's items; a job reads the approved ones a line each."""


def _repeated(values: Iterable[str]) -> str | None:
    """The first value given a second time, or None when each is given once."""
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


_CHANNEL_ID = (
    "use the channel's id (such as C0123ABCD; Slack shows it in the channel's details), "
    "not its name"
)
_APPROVER_ID = "use user ids (U0123ABCD), user group ids (S0123ABCD) or group handles (@oncall)"
_ID_HINTS = {
    "channel": _CHANNEL_ID,
    "escalate_channel": _CHANNEL_ID,
    "approvers": _APPROVER_ID,
    "escalate_to": _APPROVER_ID,
    "name": "a param's name is up to 64 letters, digits and underscores, not starting with "
    "a digit: the job reads it as SIGNOFF_PARAM_<NAME>",
    "idempotency_key": "use up to 128 letters, digits and _ . : - (no spaces or other signs)",
    "supersedes": "use the id of the approved request this one asks again for (req_...)",
}


def error_message(error: ErrorDetails) -> str:
    """One validation error in words a client can act on: pydantic's, except that an id
    or a name that does not look like one is told what to give, never a raw pattern."""
    field = next((str(part) for part in reversed(error["loc"]) if isinstance(part, str)), "")
    if error["type"] == "string_pattern_mismatch" and field in _ID_HINTS:
        return _ID_HINTS[field]
    return error["msg"].removeprefix("Value error, ")


class ReminderSettings(ClosedModel):
    """Remind approvers who have not acted every ``every`` seconds, ``limit`` times, only
    between ``start_hour`` and ``end_hour`` on each approver's own clock."""

    model_config = _BODY

    every: int = Field(default=3600, ge=60, le=7 * 86400)
    limit: int = Field(default=3, ge=0, le=20)
    start_hour: int = Field(default=9, ge=0, le=23)
    end_hour: int = Field(default=18, ge=1, le=24)

    @model_validator(mode="after")
    def _hours(self) -> Self:
        if self.start_hour >= self.end_hour:
            raise ValueError(
                f"start_hour ({self.start_hour}) must come before end_hour ({self.end_hour}) "
                "on the same day"
            )
        return self


class LadderStep(ClosedModel):
    """A further escalation step: asked when the step before it runs out of time."""

    model_config = _BODY

    channel: str | None = Field(default=None, pattern=_CHANNEL)
    approvers: list[Approver] = Field(default_factory=list, max_length=50)
    anyone_in_channel: bool = False
    expires_in: int = Field(default=4 * 3600, ge=60, le=30 * 86400, description="Seconds.")

    @model_validator(mode="after")
    def _someone(self) -> Self:
        if not self.approvers and not self.anyone_in_channel:
            raise ValueError("a ladder step needs approvers or anyone_in_channel")
        return self


class NewRequest(ClosedModel):
    """The body of ``POST /api/requests``: what to ask, where, and who may decide."""

    model_config = _BODY

    title: str = Field(min_length=1, max_length=150, description="The card's headline.")
    details: str = Field(
        default="", max_length=40000, description="Shown escaped; long text opens in a modal."
    )
    params: list[Param] = Field(default_factory=list, max_length=20)
    channel: str = Field(pattern=_CHANNEL, description="Where the card is posted.")
    approvers: list[Approver] = Field(
        default_factory=list,
        max_length=50,
        description="User ids (U…, W…), user group ids (S…) and handles (@oncall).",
    )
    anyone_in_channel: bool = False
    min_approvals: int = Field(default=1, ge=1, le=20)
    allow_self_approval: bool = False
    expires_in: int = Field(default=86400, ge=1, le=30 * 86400, description="Seconds.")
    on_expiry: Literal["deny", "escalate"] = "deny"
    if_nobody_decides: Literal["deny", "approve"] = Field(
        default="deny",
        description="Once the time (and any escalation) runs out: denied, or approved "
        "(never for a dangerous request).",
    )
    escalate_channel: str | None = Field(default=None, pattern=_CHANNEL)
    escalate_to: list[Approver] = Field(default_factory=list, max_length=50)
    escalate_anyone_in_channel: bool = False
    """Once escalated, every member of the escalation channel may decide."""
    escalate_expires_in: int | None = Field(
        default=None,
        ge=60,
        le=30 * 86400,
        description="Seconds the escalation waits before the next step (default: expires_in).",
    )
    ladder: list[LadderStep] = Field(
        default_factory=list,
        max_length=5,
        description="Further steps after the escalation, each asked when the one before it "
        "runs out of time; then if_nobody_decides.",
    )
    reminders: ReminderSettings | None = Field(default_factory=ReminderSettings)
    dangerous: bool = False
    undo_window: int | None = Field(
        default=None,
        ge=1,
        le=3600,
        description="Seconds after the deciding click during which it can be undone; the "
        "request is decided, and its job told, only when they end.",
    )
    allow_reply: bool = Field(
        default=False, description="Approvers may answer with text (the job gets it)."
    )
    callback_url: str | None = Field(default=None, max_length=2000)
    idempotency_key: str | None = Field(default=None, pattern=_ID)
    items: list[Item] = Field(
        default_factory=list,
        max_length=100,
        description="Things to approve one by one on one card (e.g. volume ids): approvers "
        "untick the ones to leave out. The request is approved when any item is.",
    )
    acts_on: str | None = Field(
        default=None,
        max_length=40000,
        description="What the job will act on (its check's output), shown on the card; a "
        "job checks it again before it runs.",
    )
    supersedes: str | None = Field(
        default=None,
        pattern=r"^req_[0-9a-f]{32}$",
        description="An approved request of this client whose acts_on changed before the "
        "job ran: this one asks again, showing what changed, in its thread.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.approvers and not self.anyone_in_channel:
            raise ValueError("name approvers, or set anyone_in_channel")
        if twice := _repeated(p.name.upper() for p in self.params):
            raise ValueError(
                f"two params are named {twice!r} whatever their case; a job reads them both "
                f"as SIGNOFF_PARAM_{twice}, so names must be distinct"
            )
        if twice := _repeated(self.approvers):
            raise ValueError(f"{twice!r} is listed twice in approvers; name each one once")
        users = [a for a in self.approvers if a[0] in "UW"]
        only_users = not self.anyone_in_channel and len(users) == len(self.approvers)
        if only_users and self.min_approvals > len(users):
            raise ValueError(
                f"min_approvals={self.min_approvals} but only {len(users)} may approve"
            )
        if self.min_approvals > 1 and (any(p.editable for p in self.params) or self.allow_reply):
            raise ValueError(
                "a quorum approves the request as shown: with min_approvals above 1, "
                "no param may be editable and allow_reply must be off"
            )
        if twice := _repeated(self.items):
            raise ValueError(f"{twice!r} is listed twice in items; each item must be distinct")
        if self.items and (self.params or self.acts_on is not None or self.undo_window):
            raise ValueError(
                "a request with items decides each one by one: not with params, acts_on or "
                "undo_window"
            )
        if self.items and self.on_expiry == "escalate":
            raise ValueError("a request with items is not escalated: use on_expiry 'deny'")
        if self.ladder and self.on_expiry != "escalate":
            raise ValueError("a ladder follows an escalation: set on_expiry 'escalate'")
        if self.if_nobody_decides == "approve" and self.dangerous:
            raise ValueError("a dangerous request is never approved by default")
        if self.supersedes is not None and self.acts_on is None:
            raise ValueError("supersedes needs acts_on: what the job acts on now")
        if self.on_expiry == "escalate" and not (
            self.escalate_to or self.escalate_anyone_in_channel
        ):
            raise ValueError(
                "on_expiry 'escalate' needs escalate_to or escalate_anyone_in_channel: "
                "someone new who may decide"
            )
        return self


class ItemView(BaseModel):
    """One item of a request with items, as it stands."""

    item: str
    status: RequestStatusName
    decided_by: str | None
    reason: str | None = Field(default=None, description="Why it was denied, excluded or lost.")


class OutcomeView(BaseModel):
    """The outcome its job reported, once approved: how the command ended, or why not run."""

    exit_status: int | None = None
    duration_seconds: float | None = None
    not_run: str | None = None
    reported_at: datetime


class RequestView(BaseModel):
    """A request as the API reports it."""

    id: str
    status: RequestStatusName
    title: str
    channel: str | None
    permalink: str | None
    not_posted: str | None = Field(
        default=None,
        description="While its card is not in Slack: what Slack answered the last try to "
        "post it (e.g. not_in_channel: invite the app to the channel). Signoff keeps trying.",
    )
    requested_by: str
    approvers: list[str]
    anyone_in_channel: bool = Field(
        default=False, description="Every member of the channel may decide, not only approvers."
    )
    min_approvals: int
    approvals: list[str]
    created_at: datetime
    expires_at: datetime | None
    escalated: bool
    escalation_channel: str | None = Field(
        default=None, description="Once escalated: the channel the step it reached asks in."
    )
    escalation_not_posted: str | None = Field(
        default=None,
        description="While the card of the escalation step it reached is not in Slack: what "
        "Slack answered the last try to post it (e.g. not_in_channel: invite the app to "
        "escalation_channel). Signoff keeps trying.",
    )
    reminders_sent: int
    held_by: str | None = Field(
        default=None, description="Who decided it, while the decision waits out its undo window."
    )
    held_until: datetime | None = Field(
        default=None, description="When that decision takes effect unless someone undoes it."
    )
    decided_by: str | None
    decided_at: datetime | None
    reason: str | None = Field(description="Why it was denied, withdrawn or lost.")
    reply: str | None = Field(description="The approver's answer, when it was replied to.")
    params: dict[str, ParamValue] = Field(description="The params, with approvers' edits.")
    items: list[ItemView] = Field(
        default_factory=list, description="Each item, for a request with items."
    )
    acts_on: str | None = Field(
        default=None, description="What the request acts on, as its card shows it."
    )
    names: dict[str, str] = Field(
        default_factory=dict,
        description="The Slack name of each user the request names, where Slack told it.",
    )
    replaces_lost: str | None = Field(
        default=None,
        description="The request Redis lost that this new one, asked with the same "
        "idempotency_key, replaces.",
    )
    superseded_by: str | None = Field(
        default=None,
        description="The request that asked again for this approval because what it acts "
        "on changed: this one's command is never started; its job waits on that one.",
    )
    started_at: datetime | None = Field(
        default=None,
        description="When its job said it started the approved command (POST .../start): "
        "the approval is used, and no other start is taken.",
    )
    outcome: OutcomeView | None = Field(
        default=None, description="What its job reported once approved (POST .../outcome)."
    )
    status_url: str

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def approved(self) -> bool:
        return self.status in APPROVED_STATUSES


class Withdrawal(ClosedModel):
    """The body of ``POST /api/requests/{id}/withdraw`` (optional)."""

    model_config = _BODY

    reason: str = Field(default="", max_length=500)


class JobStart(ClosedModel):
    """The body of ``POST /api/requests/{id}/start``: the job is starting the approved
    command; ``attempt`` names this try, so the same call sent again is taken as the same."""

    model_config = _BODY

    attempt: str = Field(pattern=r"^[A-Za-z0-9_-]{8,64}$")


class OutcomeReport(ClosedModel):
    """The body of ``POST /api/requests/{id}/outcome``: what the job did once approved, or
    why it did not run (``not_run``), which its card, reading approved, cannot tell."""

    model_config = _BODY

    exit_status: int | None = Field(default=None, ge=-255, le=255)
    duration_seconds: float | None = Field(default=None, ge=0, le=365 * 86400)
    summary: str = Field(default="", max_length=3000)
    not_run: str | None = Field(default=None, min_length=1, max_length=500)

    @model_validator(mode="after")
    def _ran_or_not(self) -> Self:
        timed = (self.exit_status is not None, self.duration_seconds is not None)
        if self.not_run is None and not all(timed):
            raise ValueError(
                "give exit_status and duration_seconds, or not_run: why it did not run"
            )
        if self.not_run is not None and any(timed):
            raise ValueError("not_run says the job did not run: give no exit_status with it")
        return self


class ApiError(BaseModel):
    """Every error: what was wrong, naming the field when one was; a 429 names the limit
    reached and the setting that raises it."""

    error: str
    field: str | None = None
    limit: int | None = None
    setting: str | None = None
