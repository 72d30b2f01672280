"""What a Slack message about one interrupt shows: the data the Block Kit builders render.

Built from the stored interrupt record, never from a Slack payload, so everything here is
either the bot's own data or agent text that the builders escape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from agent_runtime.interrupts import Decision, DecisionType
from agent_runtime.messages import JSONValue
from storage.holds import Undone
from storage.records import FINAL_STATE_OF, InterruptRecord, InterruptState
from storage.requests import is_request_run

from .blocks import date_token, mentions, to_text, user_mention
from .deciders import (
    approvals_out_of_reach,
    escalated_to,
    if_nobody_decides,
    nobody_can_approve,
    who_may_decide,
)
from .mrkdwn import code_span, escape_truncate

Outcome = Literal[
    "approved",
    "denied",
    "edited",
    "responded",
    "answered",
    "declined",
    "replied",
    "expired",
    "unanswered",
    "cancelled",
    "withdrawn",
    "changed",
    "reply_changed",
    "edit_changed",
    "approved_by_default",
]


@dataclass(frozen=True, kw_only=True)
class Card:
    """One interrupt as the approvers see it while it waits for a decision."""

    interrupt_id: str
    agent: str
    action: str
    external: bool = False
    """An external request (a job's ``POST /api/requests``): ``agent`` is the client,
    ``action`` its title, ``reason`` its details and ``args`` its params."""
    description: str | None = None
    reason: str | None = None
    args: Mapping[str, JSONValue] | None = None
    requested_by: str | None = None
    if_nobody: str | None = None
    """What happens if nobody decides, and by when, in the bot's own mrkdwn."""
    decisions: tuple[DecisionType, ...] = ("approve", "reject")
    trust_label: str | None = None
    dangerous: bool = False
    min_approvals: int = 1
    approvals: tuple[str, ...] = ()
    digest: str = ""
    nobody_can_approve: str | None = None
    """Why no one can approve it (e.g. its groups resolved to nobody), shown on the card."""
    out_of_reach: str | None = None
    """Why its approvals cannot add up (too few approvers besides the requester)."""
    deciders: str = ""
    """Who may decide, in the bot's own mrkdwn (mentions of stored ids only)."""
    escalated: str | None = None
    """Where it was escalated, in the bot's own mrkdwn, once it was."""
    question: bool = False
    """The agent asks for an answer (one of ``options``, or free text), not a go-ahead."""
    options: tuple[str, ...] = ()
    free_text: bool = True
    """Whether a question may be answered in the approver's own words (Reply)."""
    asked_by_code: bool = False
    """The tool's (or node's) own code asked: it receives the decision and acts on it."""
    held: Held | None = None
    """The deciding click, while it waits out the policy's undo window."""
    acts_on: JSONValue = None
    """What the call will act on, as its precondition answered when the card was posted."""
    changed: Mapping[str, JSONValue] | None = None
    """What changed in ``acts_on`` since an earlier approval (``added``, ``removed``)."""
    changed_by_edit: bool = False
    """Whether ``changed`` is an approver's edit of the earlier card's call, not the world."""
    changed_after_reply: bool = False
    """Whether the earlier card was answered with a reply (a job's), not approved."""
    undone: str | None = None
    """Who undid whose decision, in the bot's own mrkdwn, once someone did."""

    @property
    def button_value(self) -> str:
        """What each button carries: the interrupt id and the digest of the arguments shown."""
        return f"{self.interrupt_id} {self.digest}" if self.digest else self.interrupt_id


@dataclass(frozen=True, kw_only=True)
class Held:
    """A decision in its undo window: what it will be, whose it is, when it takes effect."""

    outcome: Outcome
    by: str
    until: datetime
    message: str | None = None
    """A denial's reason, or a reply's text."""
    args: Mapping[str, JSONValue] | None = None
    """The arguments an edit runs with."""
    trusted: bool = False
    """Approved by ``by``'s trust grant, not by a click of theirs."""
    run_waits: bool = False
    """Its run waits on other requests too: it runs once they are decided, not when final."""


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """How an interrupt ended: the outcome, who decided (None when the clock did), when."""

    outcome: Outcome
    at: datetime
    by: tuple[str, ...] = ()
    message: str | None = None
    args: Mapping[str, JSONValue] | None = None
    trust: str | None = None
    """What was trusted (and until when), or the trust it ran under, in the bot's mrkdwn."""
    in_app: bool = False
    """Decided in the app that runs the agent (its AG-UI client), not on a card."""
    run_withdrawn_by: str | None = None
    """Who withdrew the run before this decision could run, if someone did."""
    run_lost: str | None = None
    """The request of the run Redis lost while pending, which ended the run before this
    decision could take effect."""


def card_from_record(record: InterruptRecord, *, trust_label: str | None = None) -> Card:
    """The card of a stored interrupt; ``trust_label`` comes from the agent's policy."""
    interrupt = record.runtime_interrupt
    call = interrupt.tool_call
    reason = interrupt.reason
    acts_on: JSONValue = None
    changed = None
    changed_by_edit = changed_after_reply = False
    external = is_request_run(record.run_id)
    if interrupt.is_approval and isinstance(reason, dict):
        acts_on = reason.get("snapshot")
        changed = reason.get("changed") if isinstance(reason.get("changed"), dict) else None
        changed_by_edit = reason.get("edited") is True
        changed_after_reply = changed is not None and changed.get("after") == "reply"
        # A request's details; the runtime's approval reason repeats the tool and args.
        reason = reason.get("details") if external else None
    if interrupt.question and isinstance(reason, dict) and isinstance(reason.get("question"), str):
        reason = reason["question"]
    if interrupt.question and call is not None and call.args == interrupt.reason:
        call = None  # a question tool: its arguments are the question, shown as the reason
    return Card(
        interrupt_id=record.id,
        agent=record.agent,
        action=interrupt.tool_call.name if interrupt.tool_call else interrupt.name,
        external=external,
        description=interrupt.description,
        reason=to_text(reason) or None,
        args=call.args if call else None,
        requested_by=record.requested_by,
        if_nobody=if_nobody_decides(record),
        decisions=record.policy.decisions,
        trust_label=trust_label,
        dangerous=record.policy.dangerous,
        min_approvals=record.policy.min_approvals,
        approvals=record.approvals,
        digest=record.args_digest,
        nobody_can_approve=nobody_can_approve(record.policy, escalated=record.escalated),
        out_of_reach=approvals_out_of_reach(record),
        deciders=who_may_decide(record),
        escalated=escalated_to(record),
        question=interrupt.question,
        asked_by_code=not interrupt.is_approval and not interrupt.question,
        options=interrupt.options,
        free_text=record.policy.free_text_answers,
        held=_held(record),
        undone=_undone(record),
        acts_on=acts_on,
        changed=changed,
        changed_by_edit=changed_by_edit,
        changed_after_reply=changed_after_reply,
    )


def _held(record: InterruptRecord) -> Held | None:
    held = record.held
    if held is None:
        return None
    decision = Decision.from_dict(held.decision)
    return Held(
        outcome=_outcome(record, FINAL_STATE_OF[decision.type]),
        by=held.by,
        until=held.until,
        message=decision.message if decision.type != "approve" else None,
        args=decision.args if decision.type == "edit" else None,
        trusted=_trusted_until(decision) is not None,
    )


def _undone(record: InterruptRecord) -> str | None:
    undone = record.undone
    if undone is None or record.state != "pending":
        return None
    if undone.lapsed:
        return trust_lapsed(record, undone)
    return (
        f":leftwards_arrow_with_hook: {user_mention(undone.by)} undid {undid_what(undone)} "
        f"{date_token(undone.at)}; {after_undo(record)}"
    )


def trust_lapsed(record: InterruptRecord, undone: Undone) -> str:
    """An approval a trust grant made, taken back at the end of its undo window because
    the grant was revoked or ended first: no person approved it, so a person is asked."""
    how = "was revoked" if undone.lapsed == "revoked" else "ended"
    return (
        f":unlock: The approval made under {mentions(undone.deciders)}'s trust did not take "
        f"effect {date_token(undone.at)} (that trust {how} before it was final); "
        f"{after_undo(record)}"
    )


def undid_what(undone: Undone) -> str:
    """ "the decision of @alice", or "the approval made under @dave's trust" when a trust
    grant made it: its granter did not decide this request."""
    if undone.trust_grant:
        return f"the approval made under {mentions(undone.deciders)}'s trust"
    return f"the decision of {mentions(undone.deciders)}"


def after_undo(record: InterruptRecord) -> str:
    """What an undone request does next: wait for a decision again, or, undone past its
    deadline, what its expiry does (which the next sweep does at once)."""
    undone, expires = record.undone, record.expires_at
    if undone is None or expires is None or undone.at < expires:
        return "it waits for a decision again"
    if record.escalation_step < len(record.policy.rungs):
        what = "escalated"
    else:
        what = "approved by default" if record.approved_by_default else "denied"
    return f"its time is up, so it is {what}"


IN_APP = "app"
"""Who decided, for a decision made in the app that runs the agent (an AG-UI resume)."""

_TRUST_MARK = "trusted under"


def trust_mark(grant_id: str, until: datetime) -> str:
    """The message of an approval recorded under a trust grant (kept with the decision)."""
    return f"{_TRUST_MARK} {grant_id} until {until.isoformat()}"


def _trust_notes(record: InterruptRecord, decision: Decision | None) -> str | None:
    """What a decided card says of trust: the grant it made, or the grant it ran under."""
    if decision is None or decision.type != "approve":
        return None
    remember = decision.remember
    if remember is not None:
        what = "with these exact arguments" if remember.same_args else "with any arguments"
        trusted = f"{_action_span(record)} of *{escape_truncate(record.agent, 200)}*"
        if remember.scope == "run":  # its later calls in this run get no card of their own
            return f":lock_with_ink_pen: Trusted for the rest of this run: {trusted}, {what}"
        if remember.scope == "minutes" and record.decided_at:
            until = record.decided_at + timedelta(minutes=remember.minutes or 0)
            return (
                f":lock_with_ink_pen: Trusted until {date_token(until)}: {trusted} "
                f"in this channel, {what}"
            )
    trusted_until = _trusted_until(decision)
    if trusted_until is None:
        return None
    who = user_mention(record.decided_by or "")
    return (
        f":lock_with_ink_pen: Approved under the trust {who} gave until {date_token(trusted_until)}"
    )


def _trusted_until(decision: Decision) -> datetime | None:
    """When the trust grant that made ``decision`` ends; None for a decision someone made."""
    parts = (decision.message or "").split(" ")
    if decision.type != "approve" or len(parts) != 5:
        return None
    if " ".join(parts[:2]) != _TRUST_MARK or parts[3] != "until":
        return None
    try:
        return datetime.fromisoformat(parts[4])
    except ValueError:
        return None


def _action_span(record: InterruptRecord) -> str:
    interrupt = record.runtime_interrupt
    action = interrupt.tool_call.name if interrupt.tool_call else interrupt.name
    return code_span(action, 200)


def verdict_from_record(record: InterruptRecord) -> Verdict | None:
    """How the stored interrupt ended, or None while it is pending."""
    if record.state == "pending":
        return None
    decision = Decision.from_dict(record.decision) if record.decision else None
    in_app = record.decided_by == IN_APP
    if in_app:
        by: tuple[str, ...] = ()
    elif decision is not None and _trusted_until(decision) is not None:
        by = ()  # nobody clicked: its trust note names whose grant approved it
    elif record.state == "approved":
        by = record.approvals or ((record.decided_by,) if record.decided_by else ())
    else:
        by = (record.decided_by,) if record.decided_by else ()
    outcome = _outcome(record, record.state)
    if outcome == "approved" and not record.decided_by:
        return Verdict(
            outcome="approved_by_default",
            at=record.decided_at or record.created_at,
            message="Nobody decided in time, and its policy approves it then.",
            run_lost=record.run_lost,
        )
    return Verdict(
        outcome=outcome,
        at=record.decided_at or record.created_at,
        by=by,
        message=decision.message if decision and decision.type != "approve" else None,
        trust=_trust_notes(record, decision),
        in_app=in_app,
        args=decision.args if decision and decision.type == "edit" else None,
        run_withdrawn_by=record.run_withdrawn_by,
        run_lost=record.run_lost,
    )


def _outcome(record: InterruptRecord, state: InterruptState) -> Outcome:
    """How a card names the final ``state`` of ``record``."""
    if state == "pending":
        raise ValueError(f"{record.id} is not decided")
    if record.superseded_by and record.state == state:
        # Approved, but what it acts on changed first (or the edit acts on something
        # else than was shown): it was asked again.
        if state == "responded":  # a job's reply, which it would have run on
            return "reply_changed"
        return "edit_changed" if state == "edited" else "changed"
    if state == "cancelled" and (record.decided_by or is_request_run(record.run_id)):
        return "withdrawn"  # a person (or a job) withdrew it
    if record.runtime_interrupt.question and state in ("responded", "denied", "expired"):
        # A question approves nothing: it was answered, declined, or not answered in time.
        if state == "responded":
            return "answered"
        return "declined" if state == "denied" else "unanswered"
    if state == "responded" and (
        not record.runtime_interrupt.is_approval or is_request_run(record.run_id)
    ):
        return "replied"  # the tool's own code (or the job) got the reply and went on with it
    return state
