"""One card for many calls of one tool (a batch): each waiting item is a ticked checkbox,
"Approve selected" approves the ticked ones and excludes the rest, "Deny all" denies
them; each decided item says what became of it and who decided. Its compact form, drawn
when Slack finds the card too long in total, cuts the long parts as a single card's does."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from agent_runtime.interrupts import Decision
from agent_runtime.messages import JSONValue
from storage.queries import Batch
from storage.records import InterruptRecord

from . import ids
from .blocks import (
    BUTTON_TEXT,
    SECTION_TEXT,
    Block,
    button,
    confirm_dialog,
    context,
    escaped,
    header,
    plain_text,
    section,
    user_mention,
)
from .card_buttons import full_details, more_menu
from .card_summary import COMPACT_TEXT, CUT_NOTE
from .cards import Card, card_from_record, verdict_from_record
from .message import (
    HEADLINE,
    ICON,
    WOULD_RUN,
    SlackMessage,
    status_parts,
)
from .mrkdwn import code_span, visible_bidi

PER_GROUP = 10
"""Slack allows at most ten options in one checkboxes element."""
_LINES_PER_SECTION = 10
"""Item lines per section: ten of the longest still fit in a section's 3,000 characters."""
_EXCLUDED = "Excluded from the batch by "
DAMAGED_ITEM = ":warning: Its stored data is damaged, so it cannot be shown or decided here."
LOST_ITEM = (
    ":warning: Lost from Redis while it waited: it can no longer be decided, and what it "
    "asked was not done."
)
GONE_ITEM = ":warning: No longer kept in Redis, so what became of it cannot be shown."
_LABEL = 150
"""How long an item's label may be on a decided item's line."""
COMPACT_LABEL = 30
"""How long an item's label may be on a compact card (beside its checkbox too): a hundred
items' labels, ticked or decided, then fit in what Slack takes in one message."""


def excluded_by(user: str) -> Decision:
    """The rejection an unticked item gets: the agent reads who left it out."""
    return Decision.reject(f"{_EXCLUDED}{user}")


def numbered(batch: Batch) -> list[tuple[int, InterruptRecord]]:
    """The items read back with each one's place on the card: its place in the lead's
    list, so an item whose record is gone leaves a gap rather than renumbering the rest
    (a click's ticks name places, and must name the items the card showed)."""
    places = {rid: n for n, rid in enumerate(batch.order)}
    return [(places.get(record.id, n), record) for n, record in enumerate(batch.records)]


def batch_message(batch: Batch, *, compact: bool = False) -> SlackMessage:
    """The batch card for ``batch``, as its items stand now; ``compact``, its details and
    each item's label cut short, and Full details showing them whole. Its header and
    details are the lead's, or (the lead's record damaged) those of the first item read:
    every item is a call of one tool in one run."""
    card = card_from_record(batch.records[0])
    placed = numbered(batch)
    waiting = [(n, r) for n, r in placed if r.state == "pending"]
    gone = gone_places(batch)
    count = len(placed) + len(batch.damaged) + len(gone)
    if waiting:
        title = f"Approval needed: {card.action}"
    elif batch.damaged:  # what became of a damaged item is not known
        title = f"Decided but for damaged items: {card.action}"
    elif any(lost for _, lost in gone):
        title = f"Decided but for lost items: {card.action}"
    else:
        title = f"Decided: {card.action}"
    agent = f"*{escaped(card.agent, 200)}*"
    if card.external:  # a job's request with items: its details, then the items
        what, unit = f"{agent} asks about {count} items", "items"
        details = card.reason
    else:
        what, unit = f"{agent} wants to run {code_span(card.action, 300)} {count} times", "calls"
        details = card.description
    if details:
        what += "\n" + escaped(details, COMPACT_TEXT if compact else SECTION_TEXT)
    blocks: list[Block] = [header(f"{title}, {count} {unit}"), section(what)]
    if compact:
        blocks.append(context([CUT_NOTE]))
    if waiting:
        first_waiting = card_from_record(waiting[0][1])
        blocks.append(context(status_parts(first_waiting)))
        blocks += _groups(waiting, COMPACT_LABEL if compact else BUTTON_TEXT)
    label = COMPACT_LABEL if compact else _LABEL
    blocks += _outcomes(placed, damaged_places(batch), gone, label, items=batch.order)
    if waiting:
        blocks.append(_buttons(batch.order[0], card, len(waiting), compact=compact))
    elif compact:
        details_button = full_details(card)
        blocks.append(
            {"type": "actions", "block_id": ids.ACTIONS_BLOCK, "elements": [details_button]}
        )
    return SlackMessage(
        text=escaped(f"{title}, {count} {unit} ({card.agent})", 3000), blocks=blocks
    )


_LINE_BREAKING = re.compile("[\x00-\x1f\x7f\x85\u2028\u2029]")


def item_label(record: InterruptRecord, index: int) -> str:
    """``3. /tmp/c``: the item's number and its arguments (one argument's value alone) on
    one line: a newline or another control shown as its JSON escape (``\\n``), which would
    start a line of the card's own making (another item's outcome), and a bidirectional
    control shown, not obeyed, as on the card's arguments."""
    args = item_args(record)
    values = list(args.values())
    shown = values[0] if len(values) == 1 else args
    text = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False)
    one_line = _LINE_BREAKING.sub(lambda m: json.dumps(m[0])[1:-1], text)
    return f"{index + 1}. {visible_bidi(one_line)}"


def item_args(record: InterruptRecord) -> Mapping[str, JSONValue]:
    """The arguments of one item's call (none for an item without one)."""
    call = record.runtime_interrupt.tool_call
    return call.args if call else {}


def _groups(waiting: list[tuple[int, InterruptRecord]], label: int) -> list[Block]:
    """The waiting items, ticked, in groups of ten places, each labelled in at most
    ``label`` characters; a group's block id names its first place."""
    blocks = []
    for start in range(0, max(n for n, _ in waiting) + 1, PER_GROUP):
        shown = [(n, r) for n, r in waiting if start <= n < start + PER_GROUP]
        if not shown:
            continue
        options = [{"text": plain_text(item_label(r, n), label), "value": str(n)} for n, r in shown]
        box = {
            "type": "checkboxes",
            "action_id": f"{ids.BATCH_PICK}.{start}",
            "options": options,
            "initial_options": options,
        }
        blocks.append(
            {"type": "actions", "block_id": f"{ids.BATCH_BLOCK} {start}", "elements": [box]}
        )
    return blocks


def item_outcome(record: InterruptRecord) -> str | None:
    """What became of one item ("Approved", "Excluded", "Expired, not approved", ...);
    None while it waits."""
    verdict = verdict_from_record(record)
    if verdict is None:
        return None
    message = record.decision.get("message") if record.decision else None
    if verdict.outcome == "denied" and str(message or "").startswith(_EXCLUDED):
        return "Excluded"
    return HEADLINE[verdict.outcome]


def damaged_places(batch: Batch) -> list[int]:
    """The places of the items whose record is damaged."""
    return [batch.order.index(rid) for rid, _ in batch.damaged if rid in batch.order]


def gone_places(batch: Batch) -> list[tuple[int, bool]]:
    """The places of the items whose record Redis no longer has, each with whether it was
    lost while it waited (the run's other records name it as what ended the run, or its
    place, for a job's request)."""
    read = {r.id for r in batch.records} | {rid for rid, _ in batch.damaged}
    lost = {r.run_lost for r in batch.records if r.run_lost} | set(batch.lost)
    return [(n, rid in lost) for n, rid in enumerate(batch.order) if rid not in read]


def _outcomes(
    placed: list[tuple[int, InterruptRecord]],
    damaged: list[int],
    gone: list[tuple[int, bool]],
    label: int,
    *,
    items: Sequence[str],
) -> list[Block]:
    """One line per decided item (its label in at most ``label`` characters): what became
    of it, who decided, and why an approved one never ran; and one per item ``damaged`` or
    ``gone``, which the card cannot show (one lost while it waited was not done)."""
    placed_lines = [(index, f"{index + 1}. {DAMAGED_ITEM}") for index in damaged]
    placed_lines += [(n, f"{n + 1}. {LOST_ITEM if lost else GONE_ITEM}") for n, lost in gone]
    for index, record in placed:
        verdict = verdict_from_record(record)
        what = item_outcome(record)
        if verdict is None or what is None:
            continue
        shown = escaped(item_label(record, index), label)
        who = f" by {user_mention(record.decided_by)}" if record.decided_by else ""
        if verdict.outcome in WOULD_RUN:
            who += _not_run(record, items)
        placed_lines.append((index, f"{ICON[verdict.outcome]} {shown}: {what}{who}"))
    lines = [line for _, line in sorted(placed_lines)]
    return [
        section("\n".join(lines[i : i + _LINES_PER_SECTION]))
        for i in range(0, len(lines), _LINES_PER_SECTION)
    ]


def _not_run(record: InterruptRecord, items: Sequence[str]) -> str:
    """Why an approved item never ran (its run ended while it waited for the run's other
    requests: withdrawn, or one of them lost, an item of the card or not); "" if it did not."""
    if record.run_lost:
        which = "an item" if record.run_lost in items else "another request of the run"
        return f", but not run: {which} was lost, so the run was cancelled"
    if record.run_withdrawn_by:
        return f", but not run: {user_mention(record.run_withdrawn_by)} withdrew the run"
    return ""


def _buttons(lead_id: str, card: Card, waiting: int, *, compact: bool) -> Block:
    """Approve selected and Deny all (naming the lead, as the card's items are found from
    it), Full details on a compact card, and the overflow menu."""
    approve = button(
        "Approve selected",
        action_id=ids.BATCH_APPROVE,
        value=lead_id,
        style="primary",
        confirm=confirm_dialog(
            title="Approve the ticked items?",
            text="The ticked items run; each unticked one is denied as excluded by you.",
            confirm="Approve selected",
        ),
    )
    deny = button(
        "Deny all",
        action_id=ids.BATCH_DENY,
        value=lead_id,
        style="danger",
        confirm=confirm_dialog(
            title=f"Deny all {waiting}?",
            text="None of the waiting items will run.",
            confirm="Deny all",
        ),
    )
    details = [full_details(card)] if compact else []
    return {
        "type": "actions",
        "block_id": ids.ACTIONS_BLOCK,
        "elements": [approve, deny, *details, more_menu(card)],
    }
