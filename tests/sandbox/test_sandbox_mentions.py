"""Typed `@name`s and `#channel`s reach the app as Slack escapes them, over real HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from slack_bolt.async_app import AsyncAck, AsyncApp

from sandbox import AppSeed, Sandbox, SandboxClient

Serve = Callable[[AsyncApp], Awaitable[str]]  # the `serve` fixture in conftest.py

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"


@pytest.fixture
async def scripted(sb: Sandbox) -> AsyncIterator[SandboxClient]:
    async with SandboxClient(sb.base_url) as client:
        yield client


@pytest.fixture
async def commands(app: AsyncApp, serve: Serve) -> list[str]:
    """The text of every slash command the app receives."""
    seen: list[str] = []

    @app.command("/signoff")
    @app.command("/approvals")
    async def on_command(ack: AsyncAck, command: dict[str, Any]) -> None:
        seen.append(command["text"])
        await ack()

    await serve(app)
    return seen


def test_escaped_commands_are_the_manifests_should_escape_ones() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    escaped = {c["command"] for c in manifest["features"]["slash_commands"] if c["should_escape"]}
    assert set(AppSeed().escaped_commands) == escaped


async def test_an_escaped_command_gets_labelled_ids(
    scripted: SandboxClient, commands: list[str]
) -> None:
    text = "away until 2026-12-24 to @bob, tell @oncall in #ops"
    ack = await scripted.command("U0ALICE", channel="C0OPS", command="/signoff", text=text)
    assert ack["status"] == "acked"
    assert commands == [
        "away until 2026-12-24 to <@U0BOB|bob>, tell <!subteam^S0ONCALL|@oncall> in <#C0OPS|ops>"
    ]


async def test_unknown_names_and_escaped_text_stay_as_typed(
    scripted: SandboxClient, commands: list[str]
) -> None:
    text = "to @nobody #nowhere mail bob@bob.example <@U0CAROL|carol> <https://x.example/@bob>"
    await scripted.command("U0ALICE", channel="C0OPS", command="/signoff", text=text)
    await scripted.command("U0ALICE", channel="C0OPS", command="/approvals", text="to @bob")
    assert commands == [text, "to @bob"]  # /approvals is not an escaped command


async def test_a_mention_arrives_with_bare_ids(
    sb: Sandbox, scripted: SandboxClient, app: AsyncApp, serve: Serve
) -> None:
    events: list[dict[str, Any]] = []

    @app.event("app_mention")
    async def on_mention(event: dict[str, Any]) -> None:
        events.append(event)

    await serve(app)
    text = "@Signoff ask @carol in #general, @ghost"
    ts = await scripted.say("U0BOB", channel="C0OPS", text=text)
    expected = "<@U0SIGNOFF> ask <@U0CAROL> in <#C0GENERAL>, @ghost"
    assert [e["text"] for e in await sb.wait_for(lambda: events)] == [expected]
    message = sb.workspace.message("C0OPS", ts)
    assert message is not None and message.text == expected
