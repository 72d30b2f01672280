"""What ``signoff gate`` says of options and settings it cannot take: a usage error (exit 2)
in the words of the options as typed, before anything is asked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from signoff import gate
from signoff.gate_cli import (
    APPROVED_NO_COMMAND,
    EXIT_CODES,
    USAGE,
    parse_args,
    request_of,
    usage_of,
)


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


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://signoff.example.com:99999", "Port out of range"),
        ("http://[::1:8080/", "Invalid IPv6 URL"),  # its bracket never closed
    ],
)
def test_a_url_that_cannot_be_one_is_a_usage_error_at_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, url: str, said: str
) -> None:
    """Not a minute of retrying a server that cannot exist, then "unreachable" (13), nor a
    traceback."""
    monkeypatch.setenv("SIGNOFF_URL", url)
    monkeypatch.setenv("SIGNOFF_TOKEN", "sgn_token")
    with pytest.raises(SystemExit) as stopped:
        gate.main(["--channel", "C0OPS", "--title", "Rotate keys", "--approvers", "U0A"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith(f"signoff gate: SIGNOFF_URL: {said}")


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


def test_the_usage_says_the_command_did_not_run_for_every_status_but_approval(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A cron log reader learns from ``--help`` alone whether the job ran: every status the
    gate gives of its own (not 0, approved with no command; not 2, nothing was asked) says so."""
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    out = capsys.readouterr().out.split("exit status:", 1)[1]
    epilog = " ".join(out.split()).split("otherwise ", 1)[1]
    said = dict(re.findall(r"(?:^|; )(\d+) (.+?)(?=; \d+ |$)", epilog))
    assert sorted(int(code) for code in said) == sorted(EXIT_CODES)
    silent = [
        code
        for code, text in said.items()
        if int(code) not in (APPROVED_NO_COMMAND, USAGE) and "not run" not in text
    ]
    assert silent == []
