"""What a state change reports back: plain data the bot turns into a message or a refusal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from .records import InterruptRecord, InterruptState

RefusalReason = Literal[
    "unknown",  # no such interrupt (or a malformed id)
    "not_allowed",  # the user is not among the policy's approvers
    "self_approval",  # the requester may not decide their own request
    "already_decided",  # the record left 'pending'; see state and decided_by
    "expired",  # the interrupt's time is up
    "wrong_message",  # the click did not come from the message the interrupt was posted as
    "wrong_digest",  # the click was for other arguments than the stored ones
    "not_offered",  # the policy does not offer this kind of decision
    "trust_ended",  # the trust grant it was made under was revoked or has ended
    "already_voted",  # this user's approval is already counted toward the quorum
    "held",  # decided already; the decision waits out its undo window (see record.held)
    "not_held",  # an undo, but no decision is held in its undo window
    "window_closed",  # an undo after the undo window ended: the decision stands
    "damaged",  # the stored record cannot be read back (one item of a batch)
]


@dataclass(frozen=True, kw_only=True)
class DecideOutcome:
    """The result of one ``decide`` call.

    ``status`` is ``recorded`` (the interrupt reached a final state), ``progress`` (an
    approval counted, the quorum not yet met), ``held`` (the deciding click waits out the
    policy's undo window; the record stays pending), ``refused`` (nothing changed; see
    ``reason``) or ``replayed`` (this click was decided before; nothing changed;
    ``reason`` is the refusal it got then, if any; ``first`` the status it got then, so a
    replay of a click that made the record final can finish what followed it).
    ``record`` is the record after the call, None only for unknown ids.
    ``resume_job_id`` is set when this decision enqueued the run's resume job.
    """

    status: Literal["recorded", "progress", "held", "refused", "replayed"]
    reason: RefusalReason | None = None
    record: InterruptRecord | None = None
    resume_job_id: str | None = None
    first: str | None = None

    @property
    def state(self) -> InterruptState | None:
        return self.record.state if self.record else None

    @property
    def decided_by(self) -> str | None:
        return self.record.decided_by if self.record else None

    @property
    def approvals(self) -> int:
        """Distinct approvals counted so far (k of ``required``)."""
        return len(self.record.approvals) if self.record else 0

    @property
    def required(self) -> int:
        return self.record.policy.min_approvals if self.record else 0


ExpiryOutcome = Literal["expired", "escalated", "released", "reopened"]


@dataclass(frozen=True, kw_only=True)
class ExpiryResult:
    """One interrupt handled by an expiry sweep: expired for good, escalated once, its
    held decision released (made final) at the end of its undo window, or reopened there
    (an approval under a trust grant revoked or ended meanwhile)."""

    outcome: ExpiryOutcome
    record: InterruptRecord
    resume_job_id: str | None = None
    again: bool = False
    """A release handed out again, its "Approve and trust" grant not stored in time: the
    decision was made final (and counted) when first released."""


@dataclass(frozen=True, kw_only=True)
class LostRecord:
    """A pending request whose record Redis lost (evicted, or deleted by hand), handed
    to the one caller that claimed it first (an expiry sweep, a scheduler's check, a read):
    it can no longer be decided, and its run waits on it unless ended."""

    record_id: str
    run_id: str
    place: Mapping[str, str] = field(default_factory=dict)
    """An agent's run, as its creation and its posted cards kept it: ``agent``,
    ``thread_id``, ``channel``, ``thread_ts`` (its Slack thread), ``requested_by``,
    ``asked_in``, ``card:<record id>`` (``"<channel> <ts>"``) for each card posted, and
    ``escalation:<record id>`` (a JSON list of those) for its escalation cards, and
    ``batch:<lead id>`` (a JSON list of record ids) for each batch card's items; a job's
    request keeps ``channel``, ``created_at`` and its cards the same way, and
    ``lost:<record id>`` for each of its records found lost; empty when nothing kept it
    (a run stored by an earlier version)."""


@dataclass(frozen=True, kw_only=True)
class GoneScan:
    """One page of a check of the due indexes for pending records Redis lost: the ids
    found gone (their due entries left for ``claim_gone``), and where to go on."""

    gone: tuple[str, ...]
    cursors: Mapping[int, int]
    """Shard: scan cursor, for each shard not read through yet (nor failed to answer);
    empty once every shard was."""


@dataclass(frozen=True, kw_only=True)
class ReminderDue:
    """A reminder this caller alone must send now (``number`` counts from 1)."""

    number: int
    record: InterruptRecord


@dataclass(frozen=True, kw_only=True)
class Page:
    """One page of pending records; pass ``next_cursor`` back for the next page. ``before``
    and ``total`` count the list's entries before this page and in all; ``after`` is the
    cursor the page was read from (None: the first page); a cursor past the list's end
    reads its last page (its last entries) instead."""

    records: tuple[InterruptRecord, ...]
    next_cursor: str | None = None
    before: int = 0
    total: int = 0
    after: str | None = None
