"""``signoff <command> --help`` explains every argument it lists."""

from __future__ import annotations

import pytest

from bot.process.cli import main

COMMANDS = (
    ("serve",),
    ("socket",),
    ("worker",),
    ("run",),
    ("audit",),
    ("token", "create"),
    ("token", "revoke"),
    ("token", "list"),
)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_argument_of_a_commands_help_says_what_it_is(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--help"])
    assert stopped.value.code == 0
    lines = capsys.readouterr().out.split("\n\n", 1)[1].splitlines()  # past the usage
    # An argument argparse lists with nothing after it, nor on the line below, is unexplained.
    bare = [
        line.strip()
        for line, after in zip(lines, [*lines[1:], ""], strict=True)
        if line.startswith("  ")
        and not line.startswith("   ")
        and "  " not in line.strip()
        and not after.startswith(" " * 8)
    ]
    assert bare == [], bare


@pytest.mark.parametrize(
    ("command", "needed"),
    [
        (("serve",), ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "REDIS_URL", "SIGNOFF_PORT")),
        (("socket",), ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "REDIS_URL", "SIGNOFF_PORT")),
        (("worker",), ("SLACK_BOT_TOKEN", "REDIS_URL", "SIGNOFF_AGENTS")),
        (("run",), ("SLACK_BOT_TOKEN", "REDIS_URL", "SIGNOFF_AGENTS")),
        (("audit",), ("REDIS_URL",)),
        (("token",), ("REDIS_URL", "SIGNOFF_WEBHOOK_ALLOW")),
    ],
    ids=["serve", "socket", "worker", "run", "audit", "token"],
)
def test_a_commands_help_names_the_settings_it_stops_without(
    command: tuple[str, ...], needed: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """Its settings come from the environment, where ``--help`` alone would not show them."""
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    description = " ".join(capsys.readouterr().out.split("\n\n")[1].split())
    assert all(name in description for name in needed), description
