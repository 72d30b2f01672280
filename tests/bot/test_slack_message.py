"""What the interrupt message, the decided message and their modals say: the decisions
offered, who may decide, what happens if nobody does, and long parts cut and shown whole."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from blockkit import check_message, check_modal
from slack_cards import NOW
from slack_cards import make_card as _card
from slack_cards import mrkdwn_texts as _mrkdwn_texts

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall
from bot.ui import ids
from bot.ui.blocks import date_token
from bot.ui.card_summary import CUT_NOTE
from bot.ui.cards import Verdict, card_from_record
from bot.ui.deciders import if_nobody_decides
from bot.ui.message import decided_message, pending_message
from bot.ui.modals import args_modal, parse_args
from storage.approvers import ApproverPolicy
from storage.records import InterruptRecord


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
