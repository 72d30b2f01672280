"""The interrupt message, the decided message and the modals, for any agent input."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from blockkit import check_message, check_modal
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall
from bot.ui import ids
from bot.ui.batch_message import batch_message, item_label
from bot.ui.blocks import date_token
from bot.ui.cards import Card, Held, Verdict, card_from_record
from bot.ui.deciders import if_nobody_decides
from bot.ui.listing import Shown, pending_blocks, trust_blocks
from bot.ui.message import CUT_NOTE, decided_message, pending_message, verdict_note
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

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
_OWN_TOKENS = re.compile(r"<@[UW][A-Z0-9]+>|<!date\^\d+\^[^|>]*\|[^<>]*>")
_ENTITY = re.compile(r"&(amp|lt|gt);")


def _mrkdwn_texts(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["text"]] if node.get("type") == "mrkdwn" else []
        return found + [t for v in node.values() for t in _mrkdwn_texts(v)]
    if isinstance(node, list):
        return [t for v in node for t in _mrkdwn_texts(v)]
    return []


def _assert_harmless(text: str) -> None:
    rest = _OWN_TOKENS.sub("", text)
    assert "<" not in rest and ">" not in rest, text
    assert _ENTITY.sub("", rest).count("&") == 0, text


def _card(**overrides: Any) -> Card:
    base: dict[str, Any] = {
        "interrupt_id": "int_" + "a" * 32,
        "agent": "cleanup",
        "action": "delete_files",
        "description": "Delete files older than 5 days",
        "reason": "disk is full",
        "args": {"paths": ["/tmp/a", "/tmp/b"]},
        "requested_by": "U123ABC",
        "if_nobody": f"If nobody decides by {date_token(NOW + timedelta(hours=4))}, it is denied",
        "decisions": ("approve", "edit", "respond", "reject"),
    }
    base.update(overrides)
    return Card(**base)


def _action_ids(blocks: list[dict[str, Any]]) -> list[str]:
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_pending_message_offers_the_policys_decisions() -> None:
    msg = pending_message(_card(decisions=("approve", "reject")))
    assert _action_ids(msg.blocks) == [ids.APPROVE, ids.DENY, ids.MORE]
    msg = pending_message(_card(trust_label="for this run"))
    every = [ids.APPROVE, ids.TRUST, ids.EDIT, ids.REPLY, ids.DENY, ids.MORE]
    assert _action_ids(msg.blocks) == every
    check_message(msg.text, msg.blocks)


def test_dangerous_approve_has_a_confirm_dialog() -> None:
    msg = pending_message(_card(dangerous=True))
    approve = next(e for b in msg.blocks if b["type"] == "actions" for e in b["elements"])
    assert approve["confirm"]["confirm"]["text"] == "Approve"
    assert "confirm" not in next(
        e for e in msg.blocks[-1]["elements"] if e["action_id"] == ids.DENY
    )


def test_the_card_says_what_happens_if_nobody_decides_in_each_readers_time() -> None:
    def record(**policy: Any) -> InterruptRecord:
        call = ToolCall(id="c1", name="delete_files", args={})
        interrupt = Interrupt(
            id="int_1", name="approval", tool_call=call, allowed_decisions=("approve", "reject")
        )
        return InterruptRecord.new(
            interrupt,
            run_id="run_1",
            thread_id="thread_1",
            agent="cleanup",
            requested_by="U123ABC",
            policy=ApproverPolicy(
                allowed_users=("U0ALICE",), expires_in=timedelta(hours=4), **policy
            ),
            now=NOW,
            channel="C0OPS",
        )

    four, eight = date_token(NOW + timedelta(hours=4)), date_token(NOW + timedelta(hours=8))
    assert if_nobody_decides(record()) == f"If nobody decides by {four}, it is denied"
    approve = record(if_nobody_decides="approve")
    assert if_nobody_decides(approve) == f"If nobody decides by {four}, it is approved by default"
    ladder = record(on_expiry="escalate", escalate_to_users=("U0LEAD",))
    assert if_nobody_decides(ladder) == (
        f"If nobody decides by {four}, it goes to <@U0LEAD>; "
        f"if nobody decides by {eight}, it is denied"
    )
    texts = _mrkdwn_texts(pending_message(card_from_record(ladder)).blocks)
    assert any(t.startswith(f"If nobody decides by {four}") for t in texts)


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


def test_decided_message_has_no_buttons_and_says_who_and_when() -> None:
    msg = decided_message(_card(), Verdict(outcome="approved", at=NOW, by=("U42",)))
    assert _action_ids(msg.blocks) == []
    assert any("Approved by <@U42>" in t for t in _mrkdwn_texts(msg.blocks))


def test_expired_message_is_honest() -> None:
    card = _card(requested_by="U123ABC", min_approvals=2, approvals=("U1A",))
    msg = decided_message(card, Verdict(outcome="expired", at=NOW))
    assert msg.blocks[0]["text"]["text"].startswith("Expired, not approved")
    assert msg.text.startswith("Expired, not approved")
    status, approvals, requested = _mrkdwn_texts(msg.blocks[-1])
    assert status == f":hourglass: Expired, not approved {date_token(NOW)}"
    # The approval it had is not erased, and is not made to look like the decision.
    assert approvals == "1 of 2 approvals before it ended: <@U1A>"
    assert requested == "Requested by <@U123ABC>"  # who asked stays on the card
    texts = [msg.text, status, *_mrkdwn_texts(msg.blocks[:-1])]
    assert not any("<@" in t or " by " in t for t in texts), texts


def test_the_card_says_who_may_approve() -> None:
    msg = pending_message(_card(deciders="2 of <@U0ALICE>, <!subteam^S0ONCALL>, not the requester"))
    parts = _mrkdwn_texts(msg.blocks[-2])
    assert "Who may approve: 2 of <@U0ALICE>, <!subteam^S0ONCALL>, not the requester" in parts


def test_quorum_progress_shows_in_the_pending_message() -> None:
    msg = pending_message(_card(min_approvals=2, approvals=("U1",)))
    assert any("1 of 2 approvals" in t for t in _mrkdwn_texts(msg.blocks))


def test_long_arguments_get_a_full_arguments_button_and_modal() -> None:
    card = _card(args={"blob": "x" * 10_000})
    assert ids.FULL_ARGS in _action_ids(pending_message(card).blocks)
    modal = args_modal(card)
    check_modal(modal)
    assert "".join(t.strip("`") for t in _mrkdwn_texts(modal["blocks"])).count("x") == 10_000


def test_a_compact_card_cuts_every_long_part_says_so_and_offers_them_whole() -> None:
    """The card drawn when Slack refuses a long one: each part cut to a few hundred
    characters, a note saying so, and Full details (decided too) showing every part whole."""
    long = "y" * 3000
    card = _card(
        description=long,
        args={"blob": long},
        acts_on=[long],
        changed={"added": [long], "removed": [long]},
    )
    verdict = Verdict(outcome="denied", at=NOW, by=("U0ALICE",), message=long)
    for msg in (pending_message(card, compact=True), decided_message(card, verdict, compact=True)):
        check_message(msg.text, msg.blocks)
        assert sum(t.count("y") for t in _mrkdwn_texts(msg.blocks)) < 4000
        assert CUT_NOTE in _mrkdwn_texts(msg.blocks)
        assert ids.FULL_ARGS in _action_ids(msg.blocks)
    shown = "".join(t.strip("`") for t in _mrkdwn_texts(args_modal(card)["blocks"]))
    assert shown.count(long) == 5  # the description, arguments, added, removed, acts on


def test_parse_args_explains_bad_json() -> None:
    assert parse_args('{"a": 1}') == {"a": 1}
    assert "Not valid JSON" in str(parse_args("{"))
    assert "JSON object" in str(parse_args("[1]"))


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


def test_a_jobs_long_details_are_cut_on_the_card_and_shown_whole_in_a_modal() -> None:
    details = "line <b>&\n" * 600
    card = _card(external=True, agent="nightly-cleanup", action="Delete volumes", reason=details)
    msg = pending_message(card)
    check_message(msg.text, msg.blocks)
    assert "wants to run" not in str(msg.blocks)
    full = next(e for b in msg.blocks if b["type"] == "actions" for e in b["elements"][-2:-1])
    assert full["action_id"] == ids.FULL_ARGS and full["text"]["text"] == "Full details"
    modal = args_modal(card)
    shown = "".join(b["text"]["text"] for b in modal["blocks"])
    assert shown.count("line &lt;b&gt;&amp;") == 600
    assert modal["title"]["text"] == "Full details"


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
