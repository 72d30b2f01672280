"""Any text an agent gives, on a card, its forms and App Home: escaped so it never pings, links
or ends a code span, bidi controls shown not obeyed, and valid Block Kit within Slack's limits."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

from blockkit import check_message, check_modal
from hypothesis import example, given, settings
from hypothesis import strategies as st
from slack_cards import NOW
from slack_cards import make_card as _card
from slack_cards import mrkdwn_texts as _mrkdwn_texts

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall
from bot.ui.batch_message import batch_message, item_label
from bot.ui.blocks import date_token
from bot.ui.cards import Card, Held, Verdict
from bot.ui.listing import Shown, pending_blocks, trust_blocks
from bot.ui.message import decided_message, pending_message, verdict_note
from bot.ui.modals import (
    args_modal,
    batch_details_modal,
    deny_modal,
    edit_modal,
    parse_args,
    reply_modal,
)
from storage.approvers import ApproverPolicy
from storage.queries import Batch
from storage.records import InterruptRecord
from storage.trust_grants import TrustGrant

_OWN_TOKENS = re.compile(r"<@[UW][A-Z0-9]+>|<!date\^\d+\^[^|>]*\|[^<>]*>")
_ENTITY = re.compile(r"&(amp|lt|gt);")


def _assert_harmless(text: str) -> None:
    rest = _OWN_TOKENS.sub("", text)
    assert "<" not in rest and ">" not in rest, text
    assert _ENTITY.sub("", rest).count("&") == 0, text


def test_mrkdwn_injection_renders_harmless() -> None:
    evil = "<!channel> <http://evil.example|click> &lt; <@U999> <!subteam^S1>"
    card = _card(agent=evil, action=evil, description=evil, reason=evil, args={"x": evil})
    for msg in (
        pending_message(card),
        decided_message(card, Verdict(outcome="denied", at=NOW, by=("U1",), message=evil)),
    ):
        assert "<" not in msg.text and ">" not in msg.text
        assert "&amp;lt;" in msg.text
        for text in _mrkdwn_texts(msg.blocks):
            _assert_harmless(text)


def test_a_forged_user_id_is_never_a_mention() -> None:
    card = _card(requested_by="U1> <!channel")
    texts = _mrkdwn_texts(pending_message(card).blocks)
    assert not any("<!channel" in t for t in texts)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=20), children, max_size=5)
    ),
    max_leaves=30,
)
user_ids = st.from_regex(r"\A[UW][A-Z0-9]{2,10}\Z") | st.text(max_size=30)
cards = st.builds(
    Card,
    # Any record id storage accepts: run and interrupt ids of up to 128 characters each.
    interrupt_id=st.from_regex(r"\A[A-Za-z0-9_.:\-]{1,128}/[A-Za-z0-9_.:\-]{1,128}\Z"),
    digest=st.sampled_from(["", "f" * 64]),
    question=st.booleans(),
    options=st.lists(st.text(max_size=100), max_size=120).map(tuple),
    agent=st.text(max_size=500),
    action=st.text(max_size=500),
    description=st.none() | st.text(max_size=5000),
    reason=st.none() | st.text(max_size=5000),
    args=st.none() | st.dictionaries(st.text(max_size=50), json_values, max_size=8),
    requested_by=st.none() | user_ids,
    if_nobody=st.none() | st.just(f"If nobody decides by {date_token(NOW)}, it is denied"),
    decisions=st.lists(st.sampled_from(["approve", "edit", "respond", "reject"]), unique=True).map(
        tuple
    ),
    trust_label=st.none() | st.text(max_size=200),
    dangerous=st.booleans(),
    external=st.booleans(),
    min_approvals=st.integers(min_value=1, max_value=30),
    approvals=st.lists(user_ids, max_size=30).map(tuple),
    held=st.none()
    | st.builds(
        Held,
        outcome=st.sampled_from(["approved", "denied", "edited", "answered"]),
        by=user_ids,
        until=st.just(NOW),
    ),
    acts_on=st.none() | json_values,
    changed=st.none()
    | st.fixed_dictionaries({"added": st.lists(json_values), "removed": st.lists(json_values)}),
)
verdicts = st.builds(
    Verdict,
    outcome=st.sampled_from(
        [
            "approved",
            "denied",
            "edited",
            "responded",
            "expired",
            "cancelled",
            "withdrawn",
            "changed",
            "approved_by_default",
        ]
    ),
    at=st.just(NOW),
    by=st.lists(user_ids, max_size=30).map(tuple),
    message=st.none() | st.text(max_size=5000),
    args=st.none() | st.dictionaries(st.text(max_size=50), json_values, max_size=8),
)


# Text whose escaped form is cut right after the "&" of "&amp;": a plain slice leaves a
# broken entity behind.
_CUT_IN_ENTITY = "a" * 199 + "&"


@settings(max_examples=150, deadline=None)
@given(cards, verdicts)
@example(
    _card(agent=_CUT_IN_ENTITY, action=_CUT_IN_ENTITY, args={"k": _CUT_IN_ENTITY}),
    Verdict(outcome="denied", at=NOW, message=_CUT_IN_ENTITY),
)
@example(  # the longest record id, on a question's select and the overflow menu
    _card(
        interrupt_id="r" * 128 + "/" + "i" * 128, digest="f" * 64, question=True, options=("a",) * 8
    ),
    Verdict(outcome="answered", at=NOW, message="a"),
)
def test_any_input_gives_valid_block_kit_within_limits(card: Card, verdict: Verdict) -> None:
    compact = (pending_message(card, compact=True), decided_message(card, verdict, compact=True))
    for msg in (pending_message(card), decided_message(card, verdict), *compact):
        check_message(msg.text, msg.blocks)
        assert "<" not in msg.text and ">" not in msg.text
        for text in _mrkdwn_texts(msg.blocks):
            _assert_harmless(text)
    for modal in (edit_modal(card), deny_modal(card), reply_modal(card), args_modal(card)):
        check_modal(modal)
        for text in _mrkdwn_texts(modal["blocks"]):
            _assert_harmless(text)


def test_bidi_controls_in_the_arguments_are_shown_not_obeyed() -> None:
    """A right-to-left override in an argument reverses what follows it on screen (the
    path ``/srv/<RLO>hs.mr`` reads as ``/srv/rm.sh``): the approver must see the exact
    arguments, so the code block and the Edit form show the control as JSON's escape."""
    path = "/srv/\u202ehs.mr"
    card = _card(args={"path": path})
    shown = json.dumps(pending_message(card).blocks, ensure_ascii=False)
    assert "\u202e" not in shown
    assert "\\\\u202e" in shown  # the code block's text holds JSON's \u202e escape
    initial = edit_modal(card)["blocks"][1]["element"]["initial_value"]
    assert "\u202e" not in initial
    assert parse_args(initial) == {"path": path}  # the same arguments, unchanged


def test_a_batch_items_checkbox_shows_a_bidi_control_not_obeys_it() -> None:
    """The approver ticks items by their label: one with a right-to-left override in its
    argument must not read as another path."""
    call = ToolCall(id="c1", name="delete_files", args={"path": "/srv/\u202ehs.mr"})
    interrupt = Interrupt(id="int_1", name="approval", tool_call=call)
    record = InterruptRecord.new(
        interrupt,
        run_id="run_1",
        thread_id="thread_1",
        agent="cleanup",
        requested_by="U123ABC",
        policy=ApproverPolicy(allowed_users=("U0ALICE",)),
        now=NOW,
        channel="C0OPS",
    )
    assert item_label(record, 0) == "1. /srv/\\u202ehs.mr"


_NAME = "rm` *approve now* <https://evil.example|click> `x\u202ey"
"""A tool name that closes its code span: what follows would be read as mrkdwn."""


def _name_record(**fields: Any) -> InterruptRecord:
    call = ToolCall(id="c1", name=_NAME, args={"path": "/tmp/a"})
    return InterruptRecord.new(
        Interrupt(id="int_1", name=_NAME, tool_call=call),
        run_id="run_1",
        thread_id="thread_1",
        agent="cleanup",
        requested_by="U123ABC",
        policy=ApproverPolicy(allowed_users=("U0ALICE",)),
        now=NOW,
        channel="C0OPS",
    ).model_copy(update=fields)


def test_a_tool_name_with_a_backtick_stays_inside_its_code_span_everywhere() -> None:
    """The name is shown in a code span on the card, its verdict note, the batch card, the
    Edit and Reply forms, App Home's list and its trust grants: none of them lets it end
    the span, and a bidirectional control in it is shown, not obeyed."""
    card = _card(action=_NAME, asked_by_code=True)
    record = _name_record()
    approved = Verdict(outcome="approved", at=NOW, by=("U0ALICE",))
    grant = TrustGrant(
        id="trust_1",
        agent="cleanup",
        tool=_NAME,
        channel="C0OPS",
        granted_by="U0ALICE",
        granted_at=NOW,
        expires_at=NOW + timedelta(hours=1),
        record_id=record.id,
    )
    texts = [verdict_note(card, approved)]
    for node in (
        pending_message(card).blocks,
        decided_message(card, approved).blocks,
        batch_message(Batch.of([record])).blocks,
        edit_modal(card),
        reply_modal(card),
        pending_blocks(
            [record], viewer="U0ALICE", now=NOW, shown=Shown(before=0, listed=1, total=1)
        ),
        trust_blocks([grant]),
    ):
        texts += _mrkdwn_texts(node)
    shown = [t for t in texts if "approve now" in t]
    assert len(shown) >= 7
    for text in shown:
        assert "\u202e" not in text and "\\u202e" in text
        span = re.search(r"`([^`]*approve now[^`]*)`", text)
        assert span is not None and "rmˋ *approve now*" in span[1], text  # noqa: RUF001
        _assert_harmless(re.sub(r"<#C[A-Z0-9]+>", "", text))  # the grant's own channel


def test_a_backtick_where_full_details_cut_the_arguments_does_not_end_a_code_block() -> None:
    """Arguments too long for one section are cut into several code blocks: a backtick
    at a cut (an attacker can place one there) stays inside its block, in the Full
    arguments modal and in a batch card's Full details."""
    for before in range(2970, 3010):
        args = {"x": "a" * before + "`*approve now*`" + "b" * 5000}
        blocks = args_modal(_card(args=args))["blocks"]
        blocks += batch_details_modal(_card(), [(0, args), (1, args)], [])["blocks"]
        for text in _mrkdwn_texts(blocks):
            if "```" not in text:
                continue
            for inner in re.findall(r"```(.*?)```", text, flags=re.S):
                assert not inner.startswith("`") and not inner.endswith("`"), (before, text)
            assert "````" not in text, before


def test_a_batch_items_argument_cannot_draw_a_line_of_its_own_on_the_card() -> None:
    """An item's label is its argument: a newline in it would start a line of the card's
    own making, such as another item said to be approved. It is shown as ``\\n``."""
    forged = "/tmp/a\n:white_check_mark: 2. /etc/shadow: Approved by <@U0BOB>"
    items = []
    for n, path in enumerate((forged, "/etc/shadow")):
        call = ToolCall(id=f"c{n}", name="delete_files", args={"path": path})
        items.append(
            InterruptRecord.new(
                Interrupt(id=f"int_{n}", name="approval", tool_call=call),
                run_id="run_1",
                thread_id="thread_1",
                agent="cleanup",
                requested_by="U123ABC",
                policy=ApproverPolicy(allowed_users=("U0ALICE",)),
                now=NOW,
                channel="C0OPS",
            )
        )
    denied = {"state": "denied", "decided_by": "U0ALICE", "decided_at": NOW}
    decision = {"decision": {"type": "reject", "message": "no"}}
    items[0] = items[0].model_copy(update={**denied, **decision})
    batch = Batch(order=(items[0].id, items[1].id), records=items)
    for compact in (False, True):
        message = batch_message(batch, compact=compact)
        lines = [line for text in _mrkdwn_texts(message.blocks) for line in text.split("\n")]
        assert not [line for line in lines if line.startswith(":white_check_mark:")]
        assert any("1. /tmp/a\\n:white_" in line for line in lines)
    assert item_label(items[0], 0) == "1. " + forged.replace("\n", "\\n")


def test_a_bidi_control_in_any_text_an_agent_gives_is_shown_not_obeyed() -> None:
    """A right-to-left override reverses what follows it on screen: in a card's title,
    description, reason, a denial's message or a question, it is shown as its escape."""
    rlo = "before \u202eafter"
    card = _card(action=rlo, description=rlo, reason=rlo)
    question = _card(action=rlo, reason=rlo, question=True, options=(rlo, "no"))
    denied = Verdict(outcome="denied", at=NOW, by=("U1",), message=rlo)
    messages = [
        pending_message(card),
        pending_message(question),
        decided_message(card, denied),
        batch_message(Batch.of([_name_record()])),
    ]
    shown = [verdict_note(card, denied)]
    shown += [json.dumps([m.text, m.blocks], ensure_ascii=False) for m in messages]
    shown += [json.dumps(view, ensure_ascii=False) for view in (args_modal(card), edit_modal(card))]
    for text in shown:
        assert "\u202e" not in text and "u202e" in text
