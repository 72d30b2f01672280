"""The Slack message for one interrupt: while it waits, and after it is decided.

Agent text (action, description, reason, arguments) is escaped everywhere it appears,
the ``text`` notification fallback included, and every Block Kit limit holds for any input.
"""

from __future__ import annotations

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
from .card_buttons import args_cut, choices, decision_buttons, full_details, more_menu, see_all
from .card_summary import code_room, code_section, cuts_beside_args, part_length, summary
from .cards import Card, Held, Outcome, Verdict
from .mrkdwn import code_span, escape, is_truncated

FALLBACK_TEXT = 3000

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
        *summary(card, compact=compact),
        context(status_parts(card)),
    ]
    if card.question and card.options:
        blocks.append(choices(card, compact=compact))
    buttons = decision_buttons(card, details=compact or cuts_beside_args(card))
    if buttons:
        blocks.append({"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": buttons})
    return SlackMessage(text=_fallback(title, card), blocks=blocks)


def decided_message(card: Card, verdict: Verdict, *, compact: bool = False) -> SlackMessage:
    """The same message after the decision: outcome, who, when; the buttons are gone
    but Full details, on a card that cuts something (a ``compact`` one does)."""
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
    run_with = verdict.args if edited else None
    blocks = [
        header(f"{headline}: {card.action}"),
        *summary(card, edited=edited, compact=compact),
        context(parts),
        *_what_it_does(verdict.outcome, verdict.message, run_with, compact=compact),
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
    cut = cuts_beside_args(card) or args_cut(card)
    if compact or cut or _cuts_what_it_does(verdict.outcome, verdict.message, run_with):
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
    """A decision's reason, reply or answer, cut to the room its label leaves, and the
    arguments an edit runs with."""
    blocks = []
    if message:
        label = message_label(outcome)
        text = escaped(message, part_length(SECTION_TEXT - len(label), compact))
        blocks.append(section(label + text))
    if args is not None:
        blocks.append(code_section(RUN_WITH, args_json(args), compact))
    return blocks


RUN_WITH = "*Run with*"


def message_label(outcome: Outcome) -> str:
    """The label before a decision's text: a reply's, an answer's, or a reason's."""
    label = {
        "responded": "Reply",
        "replied": "Reply",
        "reply_changed": "Reply",
        "answered": "Answer",
    }.get(outcome, "Reason")
    return f"*{label}:* "


def _cuts_what_it_does(
    outcome: Outcome, message: str | None, args: Mapping[str, JSONValue] | None
) -> bool:
    """Whether the full card cuts a decision's text or the arguments an edit runs with."""
    if message and len(escape(message)) > SECTION_TEXT - len(message_label(outcome)):
        return True
    return args is not None and is_truncated(args_json(args), code_room(RUN_WITH))


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
    cut = cuts_beside_args(card) or _cuts_what_it_does(held.outcome, held.message, held.args)
    see = see_all(card, details=compact or cut)
    elements = [undo, *see, more_menu(card)]
    blocks = [
        header(f"{headline}, not yet final: {card.action}"),
        *summary(card, edited=held.args is not None, compact=compact),
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
