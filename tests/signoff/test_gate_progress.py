"""What ``signoff gate`` prints while it waits: a line for each vote, reminder and
escalation the server reports, once each."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.api.schemas import RequestView
from signoff import gate, gate_say
from signoff.gate_cli import DENIED, EXPIRED, WITHDRAWN, parse_args, request_of, usage_of
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


def test_the_undo_window_option_reaches_the_request() -> None:
    args, _ = parse_args(
        ["--title", "t", "--channel", "C0OPS", "--approvers", "U0A", "--undo-window", "90s"]
    )
    assert request_of(args).undo_window == 90
    args, _ = parse_args(["--title", "t", "--channel", "C0OPS", "--approvers", "U0A"])
    assert request_of(args).undo_window is None
    assert request_of(args).if_nobody_decides == "deny"


def test_a_param_keeps_the_digits_typed_unless_they_are_a_plain_integer() -> None:
    """An account id such as 012345678901 reaches the card and the command as typed: read
    as an integer it would lose its leading zero and name another account."""
    typed = ["--param", "account=012345678901", "--param", "limit=42", "--param", "zero=-0"]
    args, _ = parse_args(["--title", "t", "--channel", "C0OPS", "--approvers", "U0A", *typed])
    params = {p.name: (p.type, p.value) for p in request_of(args).params}
    assert params == {
        "account": ("string", "012345678901"),
        "limit": ("integer", 42),
        "zero": ("string", "-0"),
    }


_ASKING = ["--channel", "C0OPS", "--title", "Rotate keys", "--approvers", "U0A"]
"""Options of a request the gate takes."""


def _usage_error(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    *,
    url: str = "http://127.0.0.1:1",
) -> str:
    """What the gate says on stderr as it refuses ``argv`` as a usage error (exit 2)."""
    monkeypatch.setenv("SIGNOFF_URL", url)
    monkeypatch.setenv("SIGNOFF_TOKEN", "sgn_" + "x" * 30)
    with pytest.raises(SystemExit) as stopped:
        gate.main(argv)
    assert stopped.value.code == 2
    return capsys.readouterr().err


def test_a_request_with_no_approvers_is_a_usage_error_in_plain_words(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    said = _usage_error(capsys, monkeypatch, ["--channel", "C0OPS", "--title", "Rotate keys"])
    assert said == "signoff gate: name --approvers, or set --anyone-in-channel\n"


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (
            ["--param", "max-age=3"],
            "--param 'max-age=3': a param's name is up to 64 letters, digits and underscores, "
            "not starting with a digit: the job reads it as SIGNOFF_PARAM_<NAME>",
        ),
        (
            ["--idempotency-key", "cleanup 2026-11-27T03:00:00+00:00"],
            "--idempotency-key: use up to 128 letters, digits and _ . : - (no spaces or other "
            "signs)",
        ),
        # A duration out of bounds is told in the units the option takes, not in seconds.
        (["--expires", "31d"], "--expires: at most 30d"),
        (["--expires", "0s"], "--expires: at least 1s"),
        (["--undo-window", "2h"], "--undo-window: at most 1h"),
        (
            ["--item", "vol-1", "--undo-window", "60s"],
            "a request with --item decides each one by one: not with --param/--editable, "
            "--check or --undo-window",
        ),
        # Refused before its --check runs (which may take minutes), not by Signoff after.
        (
            ["--item", "vol-1", "--check", "exit 1"],
            "a request with --item decides each one by one: not with --param/--editable, "
            "--check or --undo-window",
        ),
    ],
)
def test_a_name_or_key_it_cannot_take_is_told_what_to_give_not_a_pattern(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    option: list[str],
    said: str,
) -> None:
    assert _usage_error(capsys, monkeypatch, [*_ASKING, *option]) == f"signoff gate: {said}\n"


def test_a_signoff_url_with_a_password_in_it_is_a_usage_error_naming_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = "https://ops:hunter2@signoff.example.com"
    said = _usage_error(capsys, monkeypatch, _ASKING, url=url)
    assert said.startswith("signoff gate: SIGNOFF_URL: the address has a user or password")
    assert "hunter2" not in said


def test_an_item_given_twice_is_named_with_its_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    items = ["--item", "db-1", "--item", "db-2", "--item", "db-1"]
    assert _usage_error(capsys, monkeypatch, [*_ASKING, *items]) == (
        "signoff gate: 'db-1' is listed twice in --item; each item must be distinct\n"
    )


def test_the_usage_shows_where_the_command_goes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    assert capsys.readouterr().out.startswith(
        "usage: signoff gate --title TITLE --channel CHANNEL [options] [-- COMMAND [ARG ...]]\n"
    )


def test_a_command_given_without_its_dashes_is_told_where_it_goes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A cron line missing ``--`` is a usage error saying where the command goes; a
    mistyped option is not told so."""
    options = ["--title", "t", "--channel", "C0OPS", "--approvers", "U0A"]
    with pytest.raises(SystemExit):
        parse_args([*options, "./cleanup.sh", "--apply"])
    assert capsys.readouterr().err.endswith(
        "signoff gate: error: unrecognized arguments: ./cleanup.sh --apply; put the command "
        "to run last, after --\n"
    )
    with pytest.raises(SystemExit):
        parse_args([*options, "--titel", "x"])
    assert capsys.readouterr().err.endswith("error: unrecognized arguments: --titel x\n")


def test_the_usage_names_the_settings_the_gate_reads(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    description = " ".join(capsys.readouterr().out.split("options:\n", 1)[0].split())
    assert "SIGNOFF_URL" in description and "SIGNOFF_TOKEN" in description, description


def test_every_option_of_the_usage_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    usage = capsys.readouterr().out.split("options:\n", 1)[1].split("\n\n", 1)[0]
    # An option argparse lists with nothing after it, nor on the line below, is unexplained.
    lines = usage.splitlines()
    bare = [
        line.strip()
        for line, after in zip(lines, [*lines[1:], ""], strict=True)
        if line.startswith("  -") and "  " not in line.strip() and not after.startswith(" " * 8)
    ]
    assert bare == [], bare


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


def test_a_missing_setting_is_named_alone(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_URL", "http://127.0.0.1:1")
    monkeypatch.delenv("SIGNOFF_TOKEN", raising=False)
    with pytest.raises(SystemExit) as stopped:
        gate.main(["--channel", "C0OPS", "--title", "Rotate keys", "--approvers", "U0A"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == ("signoff gate: set SIGNOFF_TOKEN (signoff token create)\n")


def test_a_token_with_a_control_character_is_a_usage_error_not_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIGNOFF_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("SIGNOFF_TOKEN", "sgn_first-half\nsgn_second-half")
    with pytest.raises(SystemExit) as stopped:
        gate.main(["--channel", "C0OPS", "--title", "Rotate keys", "--approvers", "U0A"])
    assert stopped.value.code == 2
    assert "SIGNOFF_TOKEN" in capsys.readouterr().err


def test_a_url_whose_port_cannot_be_one_is_a_usage_error_at_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not a minute of retrying a server that cannot exist, then "unreachable" (13)."""
    monkeypatch.setenv("SIGNOFF_URL", "https://signoff.example.com:99999")
    monkeypatch.setenv("SIGNOFF_TOKEN", "sgn_token")
    with pytest.raises(SystemExit) as stopped:
        gate.main(["--channel", "C0OPS", "--title", "Rotate keys", "--approvers", "U0A"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith("signoff gate: SIGNOFF_URL: Port out of range")


def test_details_are_read_from_a_file_and_one_too_long_is_named_as_typed(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.txt"
    plan.write_text("delete vol-1\ndelete vol-2\n")
    options = ["--title", "t", "--channel", "C0OPS", "--approvers", "U0A"]
    args, _ = parse_args([*options, "--details-file", str(plan)])
    assert request_of(args).details == "delete vol-1\ndelete vol-2\n"
    plan.write_text("x" * 40_001)
    with pytest.raises(ValueError) as refused:
        request_of(parse_args([*options, "--details-file", str(plan)])[0])
    assert usage_of(refused.value) == (
        f"--details-file {str(plan)!r}: String should have at most 40000 characters"
    )


def test_details_given_both_inline_and_from_a_file_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not one silently dropped for the other: the card would not show what was typed."""
    plan = tmp_path / "plan.txt"
    plan.write_text("delete vol-1\n")
    options = ["--title", "t", "--channel", "C0OPS", "--approvers", "U0A"]
    with pytest.raises(SystemExit) as stopped:
        parse_args([*options, "--details", "inline", "--details-file", str(plan)])
    assert stopped.value.code == 2
    assert "--details-file: not allowed with argument --details" in capsys.readouterr().err


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
