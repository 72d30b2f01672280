"""What is waiting for a user: the ``/signoff`` reply and the App Home tab show the same
list, a page at a time (a message holds 50 blocks), with a button to the next page."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from storage.outcomes import Page
from storage.records import InterruptRecord
from storage.requests import is_request_run
from storage.trust_grants import TrustGrant

from . import ids
from .blocks import (
    MESSAGE_BLOCKS,
    Block,
    args_json,
    button,
    confirm_dialog,
    context,
    date_token,
    escaped,
    header,
    mentions,
    section,
    user_mention,
)
from .cards import card_from_record
from .deciders import if_nobody_decides
from .message import HEADLINE
from .mrkdwn import code_block, code_span, is_truncated
from .refs import short_ref

_PER_ITEM = 2
PAGE_SIZE = (MESSAGE_BLOCKS - 3) // _PER_ITEM
"""Requests per page: a header, which part of the list it shows, two blocks each, and the
next-page button fit a message."""


def pending_blocks(
    records: Sequence[InterruptRecord],
    *,
    viewer: str,
    now: datetime,
    next_page: str | None = None,
    decide_here: bool = False,
    shown: Shown,
) -> list[Block]:
    """A header, then per card its summary and a link to its message (the permalink
    Slack gave when it was posted), then a button to the page after (``next_page``: what
    it carries, a storage cursor or Home's pair of them). With ``decide_here`` (App Home),
    a request whose arguments fit in full beside it gets Approve and Deny too; a batch is
    decided on its card only. A card ``viewer`` already approved toward a quorum says so,
    and one whose time ran out by ``now`` (not yet swept) is decided no more; ``shown``,
    which part of the whole list this page is (the header counts the whole)."""
    cards = _by_card(list(records)[:PAGE_SIZE])
    blocks: list[Block] = [header(f"Waiting for you: {_count(cards, shown)}")]
    if not cards:
        blocks.append(section("Nothing is waiting for your decision."))
        return blocks
    if shown.partial:
        blocks.append(context([shown.text()]))
    for items in cards:
        blocks += _entry(items, now, viewer)
        if decide_here and items[0].batch is None and not _time_ran_out(items[0], now):
            blocks += _decide_here(items[0], viewer)
    if next_page:
        blocks.append(_page_button(ids.NEXT_PAGE, "Next page", next_page))
    return blocks


@dataclass(frozen=True, kw_only=True)
class Shown:
    """Which part of a list a page shows: ``listed`` entries after ``before``, of ``total``
    (a batch's items count one each, as storage indexes them)."""

    before: int
    listed: int
    total: int

    @classmethod
    def of(cls, page: Page) -> Shown:
        """What ``page`` shows; on the last page, the entries it left out (decided or
        unreadable since they were counted) are not counted either."""
        listed = len(page.records)
        total = page.total if page.next_cursor else page.before + listed
        return cls(before=page.before, listed=listed, total=total)

    @property
    def partial(self) -> bool:
        return self.before > 0 or self.before + self.listed < self.total

    def text(self) -> str:
        first, last = self.before + 1, self.before + self.listed
        return (
            f"Showing {first} to {last} of {self.total}, oldest first "
            "(each item of a batch counts one)."
        )


def _page_button(action_id: str, text: str, cursor: str) -> Block:
    """A button to the page after the one shown: it carries storage's cursor, printable."""
    button = {
        "type": "button",
        "action_id": action_id,
        "text": {"type": "plain_text", "text": text},
        "value": cursor.replace("\0", " "),
    }
    return {"type": "actions", "elements": [button]}


def waiting_text(records: Sequence[InterruptRecord], *, shown: Shown) -> str:
    """The list's text (its notification): how many wait for the viewer."""
    return f"{_count(_by_card(list(records)[:PAGE_SIZE]), shown)} waiting for you"


def _count(cards: Sequence[object], shown: Shown) -> str:
    """How many wait: the cards, when the page shows them all; else the whole list, as
    storage counts it (each item of a batch counts one, as ``Shown.text`` says)."""
    return str(shown.total) if shown.partial else str(len(cards))


def _by_card(records: Sequence[InterruptRecord]) -> list[list[InterruptRecord]]:
    """``records`` grouped by the card they are on, in order: each item of a batch is a
    record of its own, but the batch is one card, so one row."""
    cards: dict[str, list[InterruptRecord]] = {}
    for record in records:
        cards.setdefault(record.batch or record.id, []).append(record)
    return list(cards.values())


def _entry(
    items: Sequence[InterruptRecord], now: datetime, viewer: str | None = None
) -> list[Block]:
    """One card in a list: what it asks, a link to it, since when, what happens if nobody
    decides (as its card says) or that its time ran out by ``now``, and whether
    ``viewer``'s approval already counts toward its quorum (else how many approvals it
    has), or a decision waits out its undo window (nobody decides it then: it can only be
    undone, on its card); and, as its card says, a dangerous action."""
    record = items[0]
    block = section(_summary(items))
    if record.permalink:
        block["accessory"] = {
            "type": "button",
            "action_id": ids.OPEN_PENDING,
            "text": {"type": "plain_text", "text": "Open"},
            "url": record.permalink,
            "value": record.id,
        }
    parts = [f"Since {date_token(record.created_at)}"]
    if record.held is None and _time_ran_out(record, now):
        parts.append(_time_up(record))
    elif record.held is None and (if_nobody := if_nobody_decides(record)):
        parts.append(if_nobody)
    if record.held is not None:
        parts.append(_held(record))
    elif viewer is not None and _counted(record, viewer):
        so_far = f"{len(record.approvals)} of {record.policy.min_approvals}"
        deny = "; a denial still ends it" if "reject" in record.policy.decisions else ""
        parts.append(f"Your approval is counted ({so_far}){deny}.")
    elif record.policy.min_approvals > 1:
        parts.append(f"{len(record.approvals)} of {record.policy.min_approvals} approvals so far")
    if record.policy.dangerous:
        parts.append(":warning: Dangerous action")
    return [block, context(parts)]


def _time_ran_out(record: InterruptRecord, now: datetime) -> bool:
    """Whether nobody may decide ``record`` any more: its time ran out, and the sweep that
    acts on that has not taken it yet."""
    return record.expires_at is not None and record.expires_at <= now


def _time_up(record: InterruptRecord) -> str:
    """What happens to a request whose time ran out, as its card said it would."""
    assert record.expires_at is not None
    if record.escalation_step < len(record.policy.rungs):
        then = "goes to its next approvers"
    elif record.approved_by_default:
        then = "is approved by default"
    else:
        then = "is not approved" if not record.runtime_interrupt.question else "is not answered"
    return f"Time ran out {date_token(record.expires_at)}: it {then}, and can no longer be decided."


def _held(record: InterruptRecord) -> str:
    """What a decision in its undo window will be, by whom, and when it takes effect."""
    held = card_from_record(record).held
    assert held is not None
    if held.trusted:  # nobody clicked: a grant approved it
        by = f"under the trust {user_mention(held.by)} gave"
    else:
        quorum = held.outcome == "approved" and len(record.approvals) > 1
        by = f"by {mentions(record.approvals if quorum else (held.by,))}"
    when = date_token(held.until, template="{time_secs}")
    return (
        f"{HEADLINE[held.outcome]} {by}, not yet final: it takes effect at {when} unless "
        "someone clicks Undo on its card."
    )


def _counted(record: InterruptRecord, viewer: str) -> bool:
    """Whether ``viewer`` (or the one they stand in for) approved an open quorum already."""
    return record.batch is None and viewer in record.approved_by


def _summary(items: Sequence[InterruptRecord]) -> str:
    """What a card asks, as the card says it: a job's request by its title, an agent's
    call by its tool; a batch adds its size, which only its lead knows (without it, the
    rest are on another page: at least those listed)."""
    record = items[0]
    interrupt = record.runtime_interrupt
    action = interrupt.tool_call.name if interrupt.tool_call else interrupt.name
    who = f"*{escaped(record.agent, 200)}*"
    request = is_request_run(record.run_id)
    if interrupt.question:  # nothing runs: the agent asks, and waits for the answer
        question = card_from_record(record).reason or action
        summary = f"{who} asks: {escaped(question, 300)}"
    elif request:
        summary = f"{who} asks: {escaped(action, 300)}"
    else:
        summary = f"{who} wants to run {code_span(action, 300)}"
    if record.batch is None:
        return summary
    lead = next((r for r in items if r.batch_items), None)
    size = str(len(lead.batch_items)) if lead else f"{len(items)}+"
    return f"{summary}, {size} {'items' if request else 'calls'}"


def _decide_here(record: InterruptRecord, decider: str) -> list[Block]:
    """The arguments in full and Approve / Deny, when the request can be decided from a list:
    the policy offers both, it is not a question, no decision waits out its undo window,
    its card shows nothing the list does not (what the call acts on, what changed), and
    its arguments fit (else only Open). Once ``decider``'s approval counts toward a
    quorum, Deny alone."""
    interrupt = record.runtime_interrupt
    offered = record.policy.decisions
    if interrupt.question or "approve" not in offered or interrupt.tool_call is None:
        return []
    card = card_from_record(record)
    if record.held is not None or card.acts_on is not None or card.changed is not None:
        return []
    text = args_json(interrupt.tool_call.args)
    if is_truncated(text, LIST_ARGS):
        return []
    value = f"{record.id} {record.args_digest}"
    approve = button("Approve", action_id=ids.HOME_APPROVE, value=value, style="primary")
    if record.policy.dangerous:
        approve["confirm"] = confirm_dialog(
            title="Approve this dangerous action?",
            text=f"{record.agent} will run {interrupt.tool_call.name}.",
            confirm="Approve",
        )
    elements = [approve] if record.awaited((decider,)) else []
    if "reject" in offered:
        elements.append(button("Deny", action_id=ids.HOME_DENY, value=value, style="danger"))
    blocks = [section(code_block(text, LIST_ARGS))]
    if elements:
        blocks.append(
            {"type": "actions", "block_id": f"home {short_ref(record.id)}", "elements": elements}
        )
    return blocks


LIST_ARGS = 500
"""Characters of arguments a list shows; longer ones are decided on the card itself."""
HOME_PAGE_SIZE = 17
"""Requests per App Home page: four blocks each, beside the trust grants (a view holds 100)."""

MAX_OPEN = 5
"""Requests open to a whole channel per App Home page (two blocks each)."""


def channel_blocks(
    records: Sequence[InterruptRecord],
    *,
    now: datetime,
    shown: Shown,
    next_page: str | None = None,
    missing: str | None = None,
) -> list[Block]:
    """Requests open to everyone in a channel the viewer is in, a row per card with a link
    to it (deciding them there is what shows the decider is in the channel), which part
    of them this page is, and a button to the next page; ``missing`` says which of the
    viewer's channels were not looked in."""
    if not records and not missing:
        return []
    blocks: list[Block] = [header(f"Open to everyone in your channels: {shown.total}")]
    notes = [*([shown.text()] if shown.partial else []), *([missing] if missing else [])]
    if notes:
        blocks.append(context(notes))
    for items in _by_card(list(records)[:MAX_OPEN]):
        blocks += _entry(items, now)
    if next_page:
        blocks.append(_page_button(ids.HOME_OPEN_PAGE, "More open to your channels", next_page))
    return blocks


MAX_GRANTS = 6
"""Trust grants listed in Home (two blocks each, beside a page of requests)."""


def trust_blocks(grants: Sequence[TrustGrant]) -> list[Block]:
    """The live trust grants, each with what it covers, until when, and a Revoke button."""
    if not grants:
        return []
    blocks: list[Block] = [header(f"Trust in force: {len(grants)}")]
    for grant in list(grants)[:MAX_GRANTS]:
        scope = "these exact arguments" if grant.args_digest else "any arguments"
        text = (
            f"{code_span(grant.tool, 200)} of *{escaped(grant.agent, 200)}* in "
            f"<#{grant.channel}>, {scope}"
        )
        block = section(text)
        block["accessory"] = {
            "type": "button",
            "action_id": ids.REVOKE_TRUST,
            "text": {"type": "plain_text", "text": "Revoke"},
            "style": "danger",
            "value": grant.id,
        }
        blocks.append(block)
        who = user_mention(grant.granted_by)
        since, until = date_token(grant.granted_at), date_token(grant.expires_at)
        blocks.append(context([f"Given by {who} {since}, until {until}"]))
    if len(grants) > MAX_GRANTS:
        more = len(grants) - MAX_GRANTS
        blocks.append(context([f"And {more} more, listed here as these end or are revoked."]))
    return blocks


def page_cursor(value: str) -> str:
    """The storage cursor a next-page button carries: a place in the list, read from the
    clicker's own entries only."""
    return value.replace(" ", "\0")


def help_text() -> str:
    return (
        "*Signoff* asks for approval before agents act.\n"
        "• `/signoff` lists the requests waiting for you.\n"
        "• `/signoff run <agent> <input>` starts a run of an agent.\n"
        "• `/signoff away until YYYY-MM-DD to @someone` has requests ask them while you are "
        "away; `/signoff back` ends it.\n"
        "• `/signoff help` shows this."
    )
