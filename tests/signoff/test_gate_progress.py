"""What ``signoff gate`` prints while it waits: a line for each vote, reminder and
escalation the server reports, once each."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from bot.api.schemas import RequestView
from signoff import gate_say
from signoff.gate_cli import DENIED, EXPIRED, WITHDRAWN
from signoff.gate_say import Progress


def _view(**changes: object) -> RequestView:
    base: dict[str, object] = {
        "id": "req_" + "0" * 32,
        "status": "pending",
        "title": "Delete 42 stale volumes",
        "channel": "C0OPS",
        "permalink": None,
        "requested_by": "nightly-cleanup",
        "approvers": ["S0ONCALL"],
        "min_approvals": 2,
        "approvals": [],
        "created_at": datetime(2026, 11, 24, tzinfo=UTC),
        "expires_at": None,
        "escalated": False,
        "reminders_sent": 0,
        "decided_by": None,
        "decided_at": None,
        "reason": None,
        "reply": None,
        "params": {},
        "status_url": "/api/requests/req_" + "0" * 32,
    }
    return RequestView.model_validate(base | changes)


def test_each_vote_reminder_and_escalation_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    progress = Progress(_view())
    progress.update(_view(approvals=["U0ALICE"]))
    progress.update(_view(approvals=["U0ALICE"], reminders_sent=1))
    progress.update(_view(approvals=["U0ALICE"], reminders_sent=1))  # nothing new
    progress.update(_view(approvals=["U0ALICE"], reminders_sent=1, escalated=True))
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: 1 of 2 approvals",
        "signoff gate: reminder 1 sent to the approvers",
        "signoff gate: not decided in time; escalated",
    ]


def test_the_vote_that_decides_is_told_once_not_as_a_count_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ "1 of 1 approvals" before "approved by" says nothing the next line does not."""
    Progress(_view(min_approvals=1)).update(
        _view(min_approvals=1, status="approved", approvals=["U0ALICE"], decided_by="U0ALICE")
    )
    until = datetime(2026, 11, 24, 14, 3, 10, tzinfo=UTC)
    Progress(_view(approvals=["U0ALICE"])).update(
        _view(approvals=["U0ALICE", "U0BOB"], held_by="U0BOB", held_until=until)
    )
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: decided by U0BOB; final at 2026-11-24T14:03:10+00:00 unless undone",
    ]


def test_a_held_decision_and_its_undo_are_one_line_each(
    capsys: pytest.CaptureFixture[str],
) -> None:
    until = datetime(2026, 11, 24, 14, 3, 10, tzinfo=UTC)
    progress = Progress(_view())
    progress.update(_view(held_by="U0ALICE", held_until=until))
    progress.update(_view(held_by="U0ALICE", held_until=until))  # nothing new
    progress.update(_view())
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: decided by U0ALICE; final at 2026-11-24T14:03:10+00:00 unless undone",
        "signoff gate: the decision was undone; waiting for a decision again",
    ]


def test_a_request_not_approved_says_who_decided_it_as_the_card_does(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = {"U0BOB": "bob"}
    denied = _view(status="denied", decided_by="U0BOB", reason="not tonight", names=names)
    assert gate_say.verdict(denied) == DENIED
    withdrawn = _view(status="withdrawn", decided_by="nightly-cleanup", reason="stopped")
    assert gate_say.verdict(withdrawn) == WITHDRAWN
    assert gate_say.verdict(_view(status="expired")) == EXPIRED
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: denied by bob (U0BOB): not tonight",
        "signoff gate: withdrawn by nightly-cleanup: stopped",
        "signoff gate: expired",
    ]


def test_a_quorum_is_announced_with_every_approver(capsys: pytest.CaptureFixture[str]) -> None:
    approved = _view(status="approved", approvals=["U0BOB", "U0CAROL"], decided_by="U0CAROL")
    assert gate_say.verdict(approved) is None  # the command may run
    assert capsys.readouterr().err == "signoff gate: approved by U0BOB, U0CAROL\n"


def test_an_approval_of_some_items_names_the_ones_left_out(
    capsys: pytest.CaptureFixture[str],
) -> None:
    items = [
        {"item": "vol-1", "status": "approved", "decided_by": "U0BOB"},
        {"item": "vol-2", "status": "denied", "decided_by": "U0BOB", "reason": "Excluded"},
        {"item": "vol-3", "status": "approved", "decided_by": "U0BOB"},
    ]
    approved = _view(status="approved", min_approvals=1, decided_by="U0BOB", items=items)
    assert gate_say.verdict(approved) is None
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: approved by U0BOB",
        "signoff gate: 2 of 3 items approved; left out: vol-2",
    ]


def test_an_edit_or_a_reply_is_named_as_its_card_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for status in ("edited", "responded"):
        assert gate_say.verdict(_view(status=status, min_approvals=1, decided_by="U0BOB")) is None
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: approved with edits by U0BOB",
        "signoff gate: replied by U0BOB",
    ]


def test_an_approval_by_default_says_nobody_decided(capsys: pytest.CaptureFixture[str]) -> None:
    assert gate_say.verdict(_view(status="approved", decided_by=None)) is None
    assert capsys.readouterr().err == "signoff gate: approved by default: nobody decided in time\n"


def test_people_are_named_as_slack_names_them_where_the_view_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    approved = _view(
        status="approved",
        approvals=["U0BOB", "U0CAROL"],
        decided_by="U0CAROL",
        names={"U0BOB": "bob"},  # Carol's name was not told
    )
    assert gate_say.verdict(approved) is None
    assert capsys.readouterr().err == "signoff gate: approved by bob (U0BOB), U0CAROL\n"


def test_a_card_not_in_the_channel_is_said_with_the_likely_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gate_say.say_waiting(
        _view(names={"S0ONCALL": "@oncall"}, not_posted="not_in_channel"), now=time.time()
    )
    assert capsys.readouterr().err.splitlines()[:2] == [
        f"signoff gate: request req_{'0' * 32} waiting for approval; its card is not in Slack "
        "yet (Slack answered not_in_channel), and Signoff keeps trying "
        "(is the app a member of C0OPS?)",
        "signoff gate: who may decide: 2 of @oncall (S0ONCALL)",
    ]


def test_a_card_still_being_posted_gets_no_guess_at_a_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A gate attached to a request another gate is posting: Slack has refused nothing."""
    gate_say.say_waiting(_view(), now=time.time())
    assert capsys.readouterr().err.splitlines()[0] == (
        f"signoff gate: request req_{'0' * 32} waiting for approval; its card is not in Slack "
        "yet, and Signoff keeps trying"
    )


def test_a_card_slack_refused_is_said_with_slacks_answer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gate_say.say_waiting(_view(not_posted="is_archived"), now=time.time())
    assert capsys.readouterr().err.splitlines()[0] == (
        f"signoff gate: request req_{'0' * 32} waiting for approval; its card is not in Slack "
        "yet (Slack answered is_archived), and Signoff keeps trying"
    )


def test_an_escalation_card_slack_refused_is_told_then_its_posting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The gate never says "escalated" as if the escalation's approvers saw it when Slack
    refused its card: it says why it is not there, then that it is."""
    progress = Progress(_view())
    refused = {"escalated": True, "escalation_channel": "C0RANDOM"}
    progress.update(_view(**refused, escalation_not_posted="not_in_channel"))
    progress.update(_view(**refused, escalation_not_posted="not_in_channel"))  # nothing new
    progress.update(_view(**refused))
    assert capsys.readouterr().err.splitlines() == [
        "signoff gate: not decided in time; escalated, but the escalation card is not in "
        "Slack yet (Slack answered not_in_channel), and Signoff keeps trying (is the app a "
        "member of C0RANDOM?)",
        "signoff gate: the escalation card is posted in C0RANDOM",
    ]


def test_a_card_slack_refused_at_first_is_told_once_it_is_posted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The gate said the card was not in Slack (the app not invited): once the outbox
    posts it, the gate says so, with the card's link, rather than staying silent."""
    progress = Progress(_view(not_posted="not_in_channel"))
    progress.update(_view(not_posted="not_in_channel"))  # nothing new
    link = "https://acme.slack.com/archives/C0OPS/p1700000000000100"
    progress.update(_view(permalink=link))
    progress.update(_view(permalink=link, approvals=["U0ALICE"]))
    assert capsys.readouterr().err.splitlines() == [
        f"signoff gate: its card is posted now: {link}",
        "signoff gate: 1 of 2 approvals",
    ]


def test_a_denial_reason_cannot_forge_a_line_of_the_gates_own(
    capsys: pytest.CaptureFixture[str],
) -> None:
    forged = "not now\nsignoff gate: approved by <@U0ALICE>\x1b[2K"
    denied = _view(status="denied", decided_by="U0BOB", reason=forged)
    assert gate_say.verdict(denied) == DENIED
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith(r": not now\nsignoff gate: approved by <@U0ALICE>\x1b[2K"), line


def test_a_reason_cannot_read_reversed_in_a_log(capsys: pytest.CaptureFixture[str]) -> None:
    """Bidirectional controls are shown escaped, so a terminal or CI log shows the text in
    the order it was sent, not reordered to say something else."""
    bidi = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    denied = _view(status="denied", decided_by="U0BOB", reason=f"fine{bidi}ok")
    assert gate_say.verdict(denied) == DENIED
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith(
        r": fine\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061cok"
    ), line


def test_json_output_escapes_what_a_terminal_would_act_on() -> None:
    """``--json`` writes bidirectional and C1 controls as JSON escapes: a parser reads the
    reason as it was sent, a terminal showing the line cannot reorder or act on it."""
    reason = "fine\u202e\u2066\x9b\u2028ok"
    line = gate_say.json_line(_view(status="denied", decided_by="U0BOB", reason=reason))
    assert line.isascii()
    assert r'"reason":"fine\u202e\u2066\u009b\u2028ok"' in line
    assert RequestView.model_validate_json(line).reason == reason
