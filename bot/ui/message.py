"""The Slack message for one interrupt: while it waits, and after it is decided.

Agent text (action, description, reason, arguments) is escaped everywhere it appears,
the ``text`` notification fallback included, and every Block Kit limit holds for any input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from agent_runtime.messages import JSONValue

from . import ids
from .blocks import (
    SECTION_TEXT,
    Block,
    args_json,
    button,
    context,
    date_token,
    escaped,
    header,
    mentions,
    section,
    user_mention,
)
from .card_buttons import choices, decision_buttons, full_details, more_menu
from .cards import Card, Held, Outcome, Verdict
from .mrkdwn import code_block, code_span

FALLBACK_TEXT = 3000
COMPACT_TEXT = 500
"""Each long part's length on a compact card: the one drawn when Slack refuses the whole
card as too long (``msg_blocks_too_long``), though each block is within its own limit."""
CUT_NOTE = "Cut to fit in Slack: *Full details* shows all of it."

HEADLINE: dict[Outcome, str] = {
    "approved": "Approved",
    "denied": "Denied",
    "edited": "Approved with edits",
    "responded": "Answered instead of run",
    "answered": "Answered",
    "declined": "Declined",
    "replied": "Replied",
    "expired": "Expired, not approved",
    "unanswered": "Expired, not answered",
    "cancelled": "Cancelled",
    "withdrawn": "Withdrawn",
    "changed": "Changed since it was approved",
    "reply_changed": "Changed since it was answered",
    "edit_changed": "Edited, so asked again",
    "approved_by_default": "Approved by default",
}
ICON: dict[Outcome, str] = {
    "approved": ":white_check_mark:",
    "denied": ":no_entry:",
    "edited": ":pencil2:",
    "responded": ":speech_balloon:",
    "answered": ":speech_balloon:",
    "declined": ":no_entry:",
    "replied": ":speech_balloon:",
    "expired": ":hourglass:",
    "unanswered": ":hourglass:",
    "cancelled": ":heavy_multiplication_x:",
    "withdrawn": ":leftwards_arrow_with_hook:",
    "changed": ":warning:",
    "reply_changed": ":warning:",
    "edit_changed": ":warning:",
    "approved_by_default": ":white_check_mark:",
}


@dataclass(frozen=True, kw_only=True)
class SlackMessage:
    """The ``text`` fallback and ``blocks`` of a chat.postMessage / chat.update call."""

    text: str
    blocks: list[Block]


def pending_message(card: Card, *, compact: bool = False) -> SlackMessage:
    """The interactive message approvers act on: what, why, the exact arguments, buttons;
    ``compact``, its long parts cut short and shown whole by Full details."""
    if card.held is not None:
        return _held_message(card, card.held, compact=compact)
    title = "Question:" if card.question else "Approval needed:"
    blocks = [
        header(f"{title} {card.action}"),
        *_summary(card, compact=compact),
        context(status_parts(card)),
    ]
    if card.question and card.options:
        blocks.append(choices(card, compact=compact))
    buttons = decision_buttons(card, compact=compact)
    if buttons:
        blocks.append({"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": buttons})
    return SlackMessage(text=_fallback(title, card), blocks=blocks)


def decided_message(card: Card, verdict: Verdict, *, compact: bool = False) -> SlackMessage:
    """The same message after the decision: outcome, who, when; the buttons are gone
    (but Full details, on a ``compact`` one)."""
    headline = HEADLINE[verdict.outcome]
    parts = _verdict_parts(verdict)
    if card.approvals and len(card.approvals) < card.min_approvals:  # a quorum cut short
        who = mentions(card.approvals)
        parts.append(
            f"{len(card.approvals)} of {card.min_approvals} approvals before it ended: {who}"
        )
    if verdict.trust:
        parts.append(verdict.trust)
    if card.escalated:  # the first card still says where it went
        parts.append(f":arrow_up: {card.escalated}")
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    edited = verdict.outcome == "edited" and verdict.args is not None
    blocks = [
        header(f"{headline}: {card.action}"),
        *_summary(card, edited=edited, compact=compact),
        context(parts),
        *_what_it_does(
            verdict.outcome, verdict.message, verdict.args if edited else None, compact=compact
        ),
    ]
    if verdict.outcome in ("changed", "reply_changed", "edit_changed"):
        why = {
            "changed": "what it acts on changed after the approval",
            "reply_changed": "what it acts on changed after the reply",
        }.get(verdict.outcome, "the edited call acts on other items than this card showed")
        blocks.append(section(f"Not run: {why}, so the approvers are asked again in this thread."))
    if verdict.run_withdrawn_by:
        what = "Not run" if verdict.outcome in WOULD_RUN else "Never passed on to the agent"
        who = user_mention(verdict.run_withdrawn_by)
        blocks.append(
            section(f"{what}: {who} withdrew the run while it waited for its other cards.")
        )
    if verdict.run_lost and verdict.outcome not in ("cancelled", "withdrawn"):
        blocks.append(section(lost_run_note(verdict.outcome, verdict.run_lost)))
    if compact:
        elements = [full_details(card)]
        blocks.append({"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": elements})
    return SlackMessage(text=_fallback(f"{headline}:", card), blocks=blocks)


def lost_run_note(outcome: Outcome, lost: str) -> str:
    """Why a decision of a run ended by a lost request never took effect."""
    what = "Not run" if outcome in WOULD_RUN else "Never passed on to the agent"
    return (
        f"{what}: the run was cancelled because request {code_span(lost, 200)} was lost "
        "from Redis and can no longer be decided."
    )


WOULD_RUN = frozenset({"approved", "edited", "approved_by_default"})
"""Outcomes whose call would have run."""


def _what_it_does(
    outcome: Outcome,
    message: str | None,
    args: Mapping[str, JSONValue] | None,
    *,
    compact: bool = False,
) -> list[Block]:
    """A decision's reason, reply or answer, and the arguments an edit runs with."""
    blocks = []
    if message:
        label = {
            "responded": "Reply",
            "replied": "Reply",
            "reply_changed": "Reply",
            "answered": "Answer",
        }.get(outcome, "Reason")
        blocks.append(section(f"*{label}:* {escaped(message, _room(SECTION_TEXT, compact))}"))
    if args is not None:
        blocks.append(_code_section("*Run with*", args_json(args), compact))
    return blocks


def _held_message(card: Card, held: Held, *, compact: bool) -> SlackMessage:
    """A decision in its undo window: what it will be, by whom, when it takes effect, and
    Undo for anyone who may decide until then."""
    headline = HEADLINE[held.outcome]
    effect = "runs" if held.outcome in ("approved", "edited") else "takes effect"
    quorum = held.outcome == "approved" and len(card.approvals) > 1
    by = f"by {mentions(card.approvals if quorum else (held.by,))}"
    if held.trusted:  # nobody clicked: a grant approved it
        by = f"under the trust {user_mention(held.by)} gave"
    when = f"at {date_token(held.until, template='{time_secs}')} unless someone clicks Undo"
    if effect == "runs" and held.run_waits:
        when = f"final {when}; it runs once its run's other requests are decided"
    else:
        when = f"{effect} {when}"
    parts = [f"{ICON[held.outcome]} {headline} {by}: {when}"]
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    undo = button("Undo", action_id=ids.UNDO, value=card.button_value, style="danger")
    elements = [undo, full_details(card), more_menu(card)] if compact else [undo, more_menu(card)]
    blocks = [
        header(f"{headline}, not yet final: {card.action}"),
        *_summary(card, edited=held.args is not None, compact=compact),
        context(parts),
        *_what_it_does(held.outcome, held.message, held.args, compact=compact),
        {"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": elements},
    ]
    return SlackMessage(text=_fallback(f"{headline}, not yet final:", card), blocks=blocks)


def verdict_note(card: Card, verdict: Verdict) -> str:
    """One line for the requester: the outcome, who decided, what it was about."""
    return f"{_verdict_parts(verdict)[0]}: {code_span(card.action, 200)}"


def _fallback(prefix: str, card: Card) -> str:
    return escaped(f"{prefix} {card.action} ({card.agent})", FALLBACK_TEXT)


def _room(full: int, compact: bool) -> int:
    """How long one long part may be: ``full``, or COMPACT_TEXT on a compact card."""
    return min(full, COMPACT_TEXT) if compact else full


def _summary(card: Card, *, edited: bool = False, compact: bool = False) -> list[Block]:
    """What was asked; once ``edited``, its description and arguments are labelled as
    asked, since the call that ran is the edit (shown below them). A ``compact`` one cuts
    each long part short and says so."""
    note = [context([CUT_NOTE])] if compact else []
    if card.external:
        return _request_summary(card, edited, compact) + _acts_on(card, compact) + note
    room = _room(SECTION_TEXT, compact)
    what = f"*{escaped(card.agent, 200)}* wants to run {code_span(card.action, 300)}"
    if card.question:
        what = f"*{escaped(card.agent, 200)}* asks"
        if card.args is not None:
            what += f" while running {code_span(card.action, 300)}"
    if card.description:
        what += "\n" + ("As asked: " if edited else "") + escaped(card.description, room)
    if card.question and card.reason:
        what += ":\n" + escaped(card.reason, room)
    blocks = [section(what)]
    if card.reason and not card.question:
        blocks.append(section("*Why:* " + escaped(card.reason, room)))
    if card.args is not None:
        label = "*Arguments as asked*" if edited else "*Arguments*"
        blocks.append(_code_section(label, args_json(card.args), compact))
    return blocks + _acts_on(card, compact) + note


def _acts_on(card: Card, compact: bool = False) -> list[Block]:
    """What the call will act on (its precondition's answer), and what changed since an
    earlier approval, so the approver sees the difference they are asked about."""
    blocks = []
    if card.changed is not None:
        title = (
            "Edited: not what the earlier card showed"
            if card.changed_by_edit
            else "Changed since it was answered"
            if card.changed_after_reply
            else "Changed since it was approved"
        )
        blocks.append(_changes_section(f":warning: *{title}*", card.changed, compact))
    if card.acts_on is not None:
        blocks.append(_code_section("*It will act on*", printed(card.acts_on), compact))
    return blocks


def _code_section(label: str, text: str, compact: bool) -> Block:
    """``label`` over ``text`` in a code block cut to the room the label leaves in a
    section: a section cut past its limit would take the block's closing fence, and show
    the rest as mrkdwn."""
    heading = f"{label}\n"
    return section(heading + code_block(text, _room(SECTION_TEXT - len(heading), compact)))


def _changes_section(title: str, changed: Mapping[str, JSONValue], compact: bool) -> Block:
    """``title`` over what changed (added, removed, now), each in a code block that gets
    an equal share of the room the section leaves, so every block stays closed."""
    shown = [
        (f"\n{label}: ", changed[key])
        for key, label in (("added", "Added"), ("removed", "Removed"), ("now", "Now"))
        if changed.get(key) not in (None, [])
    ]
    room = (SECTION_TEXT - len(title) - sum(len(lead) for lead, _ in shown)) // max(len(shown), 1)
    lines = [lead + code_block(printed(value), _room(room, compact)) for lead, value in shown]
    return section(title + "".join(lines))


def printed(value: JSONValue) -> str:
    """A check's output as printed (a job's lines of text), anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(str(v) for v in value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _request_summary(card: Card, edited: bool, compact: bool) -> list[Block]:
    """A job's request: its details (in full in a modal when long) and its params, once
    ``edited`` labelled as asked (the job runs with the edit, shown below them)."""
    blocks = []
    if card.reason:
        blocks.append(section(escaped(card.reason, _room(SECTION_TEXT, compact))))
    if card.args:
        label = "*Params as asked*" if edited else "*Params*"
        blocks.append(_code_section(label, args_json(card.args), compact))
    return blocks


def status_parts(card: Card) -> list[str]:
    parts = []
    if card.requested_by:
        parts.append(f"Requested by {user_mention(card.requested_by)}")
    if card.escalated:
        parts.append(f":arrow_up: {card.escalated}")
    if card.if_nobody is not None:
        parts.append(card.if_nobody)
    if card.deciders and not card.nobody_can_approve:
        parts.append(f"Who may approve: {card.deciders}")
    if card.min_approvals > 1:
        who = mentions(card.approvals)
        so_far = f": {who}" if who else ""
        deny = "; any deny ends it" if "reject" in card.decisions else ""
        parts.append(f"{len(card.approvals)} of {card.min_approvals} approvals{so_far}{deny}")
    if card.dangerous:
        parts.append(":warning: Dangerous action")
    if card.nobody_can_approve:
        parts.append(card.nobody_can_approve)
    elif card.out_of_reach:
        parts.append(card.out_of_reach)
    if card.undone:
        parts.append(card.undone)
    return parts or ["Waiting for a decision"]


def _verdict_parts(verdict: Verdict) -> list[str]:
    icon, headline = ICON[verdict.outcome], HEADLINE[verdict.outcome]
    if verdict.in_app:
        return [f"{icon} {headline}: decided in the app {date_token(verdict.at)}"]
    if verdict.by:
        who = mentions(verdict.by)
        return [f"{icon} {headline} by {who} {date_token(verdict.at)}"]
    return [f"{icon} {headline} {date_token(verdict.at)}"]
