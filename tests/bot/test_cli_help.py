"""``signoff <command> --help`` explains every argument it lists, and names only settings
Signoff reads, each of which the README documents."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from bot.process.cli import main

ROOT = Path(__file__).resolve().parents[2]
SETTING = re.compile(r"(SIGNOFF|SLACK)_[A-Z_]+|REDIS_URL")

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


def _settings_read() -> set[str]:
    """The environment variables the bot and storage read: each is a string of its own in
    the code (``"SIGNOFF_PORT"``), not part of a message."""
    names = set()
    for package in ("bot", "storage"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                value = node.value if isinstance(node, ast.Constant) else None
                if isinstance(value, str) and SETTING.fullmatch(value):
                    names.add(value)
    return names


def test_every_setting_a_help_names_is_read_and_every_one_read_is_in_the_readme(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--help`` names no setting that does nothing, and an operator finds each setting
    Signoff reads where the README tells how to run it in a workspace."""
    read = _settings_read()
    for command in COMMANDS:
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        named = {m.group(0) for m in SETTING.finditer(capsys.readouterr().out)}
        assert named <= read, (command, named - read)
    readme = (ROOT / "README.md").read_text()
    running = readme.split("## Running it in your Slack workspace", 1)[1].split("\n## ", 1)[0]
    assert {"SIGNOFF_PORT", "SIGNOFF_LOG_LEVEL", "SLACK_APP_TOKEN"} <= read  # the scan works
    assert sorted(name for name in read if not re.search(f"`{name}[`=]", running)) == []
