"""What a user is told when their click changes nothing, and why."""

from __future__ import annotations

from agent_runtime.interrupts import Decision
from storage.outcomes import DecideOutcome
from storage.records import InterruptRecord
from storage.requests import is_request_run

from .blocks import date_token, mentions, user_mention
from .cards import IN_APP, Outcome, verdict_from_record
from .deciders import nobody_can_approve, who_may_decide
from .message import HEADLINE

DAMAGED = (
    "This request's stored data is damaged, so it cannot be decided; an operator can see it "
    "in the audit trail (`signoff audit`)."
)
DAMAGED_BATCH = (
    "Item 1 of this card is damaged in storage, and with it the card's list of its items, "
    "so none of them can be decided from this card. An operator can see it in the audit "
    "trail (`signoff audit`), and repair or delete that record."
)
_TEXT = {
    "unknown": "This approval request no longer exists; nothing was decided.",
    "not_pending": "This request is no longer waiting for a decision; nothing changed.",
    "not_allowed": "You are not among the approvers of this request; nothing was decided.",
    "self_approval": "You asked for this, so someone else has to decide it.",
    "expired": "This request has expired; nothing was approved.",
    "wrong_message": "This button does not belong to this request's message; nothing changed.",
    "wrong_digest": "The arguments changed since this message was shown; nothing was decided.",
    "not_offered": "That decision is not offered for this request.",
    "not_held": "No decision on this request is waiting to be undone; nothing changed.",
    "window_closed": "The undo window has ended, so the decision stands; nothing was undone.",
    "damaged": DAMAGED,
}


STORAGE_DOWN = (
    "Signoff could not reach its storage, so nothing was recorded. Try again in a minute."
)
LIST_DOWN = "Signoff could not reach its storage to list what waits for you. Try again in a minute."
FORM_NOT_OPENED = "Slack did not open the form, so nothing was decided. Click the button again."
FORM_UNCONFIRMED = (
    "Signoff could not confirm this decision in time: its storage is slow to answer. The "
    "card will show it once it is recorded; if the card does not change, submit again."
)
UNCONFIRMED = (
    "Signoff could not confirm your click yet: its storage is slow to answer. The card "
    "will show the result once it is recorded; if it does not change, click again."
)


def agent_not_built(exc: Exception, *, so: str) -> str:
    """Why a click that needs the request's agent changed nothing: its build failed in
    this process (``exc`` names the agent and the error's kind; the log has the rest)."""
    return f"Signoff could not load this request's agent ({exc}; see the bot's log), so {so}."


def refusal_text(outcome: DecideOutcome) -> str:
    """One sentence, in the bot's own mrkdwn (user ids only as mentions)."""
    reason = outcome.reason or "unknown"
    if reason == "already_decided" and outcome.record is not None:
        record = outcome.record
        # Withdrawn by a person (or a job), as its card says; not a run cancelled otherwise.
        if record.state == "cancelled" and (record.decided_by or is_request_run(record.run_id)):
            by = f" by {user_mention(record.decided_by)}" if record.decided_by else ""
            return f"This request was withdrawn{by}; your click changed nothing."
    if reason == "already_decided" and outcome.decided_by == IN_APP:
        return f"Already {_as_carded(outcome)} in the app; your click changed nothing."
    if reason == "already_decided":
        quorum = outcome.record.approvals if outcome.record is not None else ()
        if outcome.state == "approved" and len(quorum) > 1:
            who = f" by {mentions(quorum)}"  # as the card credits a quorum
        else:
            who = f" by {user_mention(outcome.decided_by)}" if outcome.decided_by else ""
        return f"Already {_as_carded(outcome)}{who}; your click changed nothing."
    if reason == "expired" and outcome.record is not None:
        return _time_up(outcome.record)
    if reason == "not_allowed" and outcome.record is not None:
        record = outcome.record
        unreachable = nobody_can_approve(record.policy, escalated=record.escalated)
        if unreachable:
            return unreachable
        who = who_may_decide(record)
        if who:
            return f"{reason_text(reason)} Who may approve: {who}."
    if reason == "held" and outcome.record is not None and outcome.record.held is not None:
        record, held = outcome.record, outcome.record.held
        by_quorum = (
            Decision.from_dict(held.decision).type == "approve" and len(record.approvals) > 1
        )
        who = mentions(record.approvals) if by_quorum else user_mention(held.by)
        return (
            f"Already decided by {who}: it becomes final at "
            f"{date_token(held.until, template='{time_secs}')} unless someone clicks Undo; "
            "your click changed nothing."
        )
    if reason == "already_voted":
        counted = f"({outcome.approvals} of {outcome.required}); waiting for others."
        if outcome.record is not None and outcome.record.policy.stand_ins:
            return (
                f"An approval in your name is already counted {counted} Someone away and "
                "the person standing in for them count as one."
            )
        return f"Your approval is already counted {counted}"
    return reason_text(reason)


def late_text(missed: InterruptRecord, stored: InterruptRecord | None) -> str:
    """What a click refused as past ``missed``'s deadline is told, from the record as
    ``stored`` once its expiry was made (by that click, the sweep or another click), or
    while it is not (clicks made in time are decided first): what has happened, never
    what is still to come."""
    if stored is None:
        return reason_text("unknown")
    if stored.state == "pending" and stored.escalation_step > missed.escalation_step:
        return "This request's time is up and it is escalated now; your click changed nothing."
    if stored.state in ("pending", "expired") or _by_default(stored):
        return _time_up(stored)
    return refusal_text(DecideOutcome(status="refused", reason="already_decided", record=stored))


def _by_default(record: InterruptRecord) -> bool:
    """Whether ``record`` was approved by its expiry (nobody decided it), as its card says."""
    return record.state == "approved" and not record.decided_by


def _time_up(record: InterruptRecord) -> str:
    """Why a click after the deadline changes nothing, and what its expiry stored, if it
    stored anything yet (a request still pending says only that its time is up)."""
    question = record.runtime_interrupt.question
    if record.state == "pending":
        if question:
            return "This question's time is up; your answer changed nothing."
        return "This request's time is up; your click changed nothing."
    if _by_default(record):
        return (
            "This request's time is up, so it is approved by default, as its card said; "
            "your click changed nothing."
        )
    if question:
        return "This question's time is up; nothing was answered."
    return _TEXT["expired"]


def reason_text(reason: str) -> str:
    """The sentence for a refusal reason that needs no record to explain."""
    return _TEXT.get(reason, "Nothing was decided.")


_CARD_WORDS: frozenset[Outcome] = frozenset(
    {"edited", "responded", "answered", "declined", "replied", "approved_by_default"}
)
"""Decisions whose card names them otherwise than storage's state does."""


def _as_carded(outcome: DecideOutcome) -> str:
    """The decision a click came too late for, in its card's words ("approved with edits",
    "answered"), not storage's ("edited", "responded")."""
    verdict = verdict_from_record(outcome.record) if outcome.record is not None else None
    if verdict is not None and verdict.outcome in _CARD_WORDS:
        return HEADLINE[verdict.outcome].lower()
    return outcome.state or "decided"
