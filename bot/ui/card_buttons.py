"""The buttons of an interrupt's card: a question's answers, the decisions its policy
offers, the full-details button, and the overflow menu that withdraws the request."""

from __future__ import annotations

from . import ids
from .arg_choices import OPTIONS, option_list
from .blocks import (
    BUTTON_TEXT,
    SECTION_TEXT,
    Block,
    args_json,
    button,
    confirm_dialog,
    plain_text,
)
from .cards import Card
from .mrkdwn import is_truncated
from .option_texts import option_texts
from .refs import short_ref

CHOICE_BUTTONS = 5
"""Up to this many answers are buttons; more are one select."""
SELECT_OPTIONS = OPTIONS * OPTIONS
"""The most answers a select offers: 100 groups of 100."""
COMPACT_CHOICES = 6_000
"""The text a compact card's answers share: about half what Slack takes in a message's
blocks together (``msg_blocks_too_long``), so many long answers still fit."""
COMPACT_CHOICE = 16
"""The shortest an answer is cut to on a compact card: its start and end still show."""
COMPACT_OFFERED = COMPACT_CHOICES // COMPACT_CHOICE
"""The most answers a compact card offers: more, even cut that short, would pass Slack's
total, and the card would never be posted."""
ARGS_CODE = SECTION_TEXT - len("*Arguments*\n")
"""The longest arguments code block of a card, inside a section with its label."""


def choices(card: Card, *, compact: bool = False) -> Block:
    """A question's answers: a button each when there are five or fewer, else one select
    (in option groups of 100 past 100); ``compact``, each answer's text shares a budget,
    and only the first answers that fit it are offered (the placeholder says so).

    The block id carries the interrupt reference (a short key for a long id, which fits a
    block id); each answer is only its index, and the decider reads the answer itself
    from the stored question.
    """
    block_id = " ".join(
        filter(None, (ids.CHOICES_BLOCK, short_ref(card.interrupt_id), card.digest))
    )
    offered = card.options[: COMPACT_OFFERED if compact else SELECT_OPTIONS]
    room = BUTTON_TEXT
    if compact:
        room = min(room, max(COMPACT_CHOICE, COMPACT_CHOICES // max(len(offered), 1)))
    placeholder = "Choose an answer"
    if len(offered) < len(card.options):
        placeholder += f" (the first {len(offered)} of {len(card.options)})"
    texts = option_texts(offered, room)
    if len(card.options) <= CHOICE_BUTTONS:
        elements = [
            button(text, action_id=f"{ids.CHOOSE}.{i}", value=str(i))
            for i, text in enumerate(texts)
        ]
    else:
        elements = [
            {
                "type": "static_select",
                "action_id": ids.CHOOSE,
                "placeholder": plain_text(placeholder, BUTTON_TEXT),
                **option_list(
                    [
                        {"text": plain_text(text, BUTTON_TEXT), "value": str(i)}
                        for i, text in enumerate(texts)
                    ]
                ),
            }
        ]
    return {"type": "actions", "block_id": block_id, "elements": elements}


def decision_buttons(card: Card, *, details: bool) -> list[Block]:
    """The decisions the card's policy offers, then the button that shows what the card
    cut (``see_all``), and the overflow menu."""
    if card.question:
        return question_buttons(card, details=details)
    value = card.button_value
    approve_confirm = (
        confirm_dialog(
            title=f"Approve {card.action}?",
            text=f"{card.agent} will run {card.action}. This action is marked dangerous.",
            confirm="Approve",
        )
        if card.dangerous
        else None
    )
    elements: list[Block] = []
    if "approve" in card.decisions:
        elements.append(
            button(
                "Approve",
                action_id=ids.APPROVE,
                value=value,
                style="primary",
                confirm=approve_confirm,
            )
        )
        if card.trust_label:
            elements.append(
                button(
                    f"Approve and trust {card.trust_label}",
                    action_id=ids.TRUST,
                    value=value,
                    confirm=approve_confirm,
                )
            )
    if "edit" in card.decisions and card.args is not None:
        elements.append(button("Edit", action_id=ids.EDIT, value=value))
    if "respond" in card.decisions:
        elements.append(button("Reply", action_id=ids.REPLY, value=value))
    if "reject" in card.decisions:
        elements.append(button("Deny", action_id=ids.DENY, value=value, style="danger"))
    return [*elements, *see_all(card, details=details), more_menu(card)]


def more_menu(card: Card) -> Block:
    """The overflow menu: the requester (or an admin) withdraws the request from here. Its
    option's value holds 150 characters, so a long record id is carried as a short key."""
    record_id = short_ref(card.interrupt_id)
    return {
        "type": "overflow",
        "action_id": ids.MORE,
        "options": [
            {
                "text": plain_text("Withdraw request", BUTTON_TEXT),
                "value": f"{ids.WITHDRAW} {record_id}",
            }
        ],
        "confirm": confirm_dialog(
            title="Withdraw this request?",
            text=(
                "The job that asked is told it was withdrawn. Only a Signoff admin can "
                "withdraw it here."
                if card.external
                else "The run is cancelled and nothing it waits on will run. Only the "
                "requester or an admin can withdraw it."
            ),
            confirm="Withdraw",
        ),
    }


def question_buttons(card: Card, *, details: bool) -> list[Block]:
    """Beside a question's answers: a reply in the approver's words, and Decline."""
    value = card.button_value
    elements: list[Block] = []
    if card.free_text or not card.options:
        label = "Reply in your own words" if card.options else "Reply"
        elements.append(button(label, action_id=ids.REPLY, value=value, style="primary"))
    if "reject" in card.decisions:
        elements.append(button("Decline", action_id=ids.DENY, value=value, style="danger"))
    return [*elements, *see_all(card, details=details), more_menu(card)]


def see_all(card: Card, *, details: bool) -> list[Block]:
    """The button that shows what the card cut: Full details (``details``: a compact card,
    or one that cut more than its arguments; or a job's params cut), else Show full
    arguments where only a call's arguments were cut; none when nothing was."""
    if details or (card.external and args_cut(card)):
        return [full_details(card)]
    if args_cut(card):
        return [button("Show full arguments", action_id=ids.FULL_ARGS, value=card.button_value)]
    return []


def full_details(card: Card) -> Block:
    """The button that shows the card's long parts whole, in a modal."""
    return button("Full details", action_id=ids.FULL_ARGS, value=card.button_value)


def args_cut(card: Card) -> bool:
    """Whether the card cuts its arguments (a job's params)."""
    return card.args is not None and is_truncated(args_json(card.args), ARGS_CODE)
