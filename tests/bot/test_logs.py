"""Logs an operator can query: one JSON object per line off a terminal, with the ids of
the work at hand (set once where it starts, carried into the tasks it starts)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
from typing import Any

import aiohttp
import pytest
from fakes import BOT_TOKEN, FakeSlack, Fault
from harness import ALICE, CHANNEL, Harness
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.errors import ConfigError
from bot.process.logs import configure_logging
from bot.services.log_context import log_ids
from bot.slack.app import build_app
from bot.slack.socket_mode import TimedSocketModeHandler
from bot.ui.posting import post_ephemeral


async def test_a_json_line_carries_the_ids_of_the_work_at_hand(captured: io.StringIO) -> None:
    configure_logging({"SIGNOFF_LOG_FORMAT": "json"}, captured)
    log = logging.getLogger("signoff.test")
    with log_ids(record_id="run_1/int_1", user="U0ALICE", channel="C0OPS"):
        log.info("decided %s", "approve")

        async def later() -> None:
            with log_ids(run_id="run_1"):
                log.warning("resumed")

        await asyncio.create_task(later())  # a task started here keeps the ids
    log.error("outside", exc_info=ValueError("boom"))
    first, second, third = (json.loads(line) for line in captured.getvalue().splitlines())
    assert first["event"] == "decided approve" and first["level"] == "info"
    assert (first["record_id"], first["user"], first["channel"]) == (
        "run_1/int_1",
        "U0ALICE",
        "C0OPS",
    )
    assert second["run_id"] == "run_1" and second["record_id"] == "run_1/int_1"
    assert "record_id" not in third and "ValueError: boom" in third["error"]


def test_off_a_terminal_the_default_is_json_and_text_shows_the_ids(
    captured: io.StringIO,
) -> None:
    configure_logging({}, captured)  # a StringIO is not a terminal
    logging.getLogger("signoff.test").info("plain")
    assert json.loads(captured.getvalue())["event"] == "plain"
    configure_logging({"SIGNOFF_LOG_FORMAT": "Text"}, captured)  # in any case
    with log_ids(run_id="run_2"):
        logging.getLogger("signoff.test").info("as text")
    assert captured.getvalue().splitlines()[-1].endswith("signoff.test: as text [run_id=run_2]")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_default_is_text_at_info(captured: io.StringIO) -> None:
    terminal = _Terminal()
    configure_logging({}, terminal)
    logging.getLogger("signoff.test").debug("hidden")
    logging.getLogger("signoff.test").info("shown")
    [line] = terminal.getvalue().splitlines()
    assert line.endswith(" INFO signoff.test: shown"), line


def test_a_text_line_shows_control_characters_in_what_it_quotes_instead_of_obeying_them(
    captured: io.StringIO,
) -> None:
    """A tool name or error an agent gives cannot forge a second log line, clear or
    recolour an operator's terminal, or read reversed."""
    configure_logging({"SIGNOFF_LOG_FORMAT": "text"}, captured)
    forged = "x\n2026-11-27 09:00:00,000 INFO bot: approved by admin\x1b[2J"
    logging.getLogger("signoff.test").info("tool %s failed", forged)
    [line] = captured.getvalue().splitlines()
    assert line.endswith(
        "signoff.test: tool x\\n2026-11-27 09:00:00,000 INFO bot: approved by admin\\x1b[2J failed"
    )
    logging.getLogger("signoff.test").info("tool %s failed", "rm\u202e gol.txt")
    assert captured.getvalue().splitlines()[-1].endswith("tool rm\\u202e gol.txt failed")
    try:
        raise ValueError("a traceback keeps its own lines")
    except ValueError:
        logging.getLogger("signoff.test").exception("step failed")
    assert "Traceback (most recent call last):\n" in captured.getvalue()


def test_an_error_an_agent_words_cannot_forge_a_line_inside_a_traceback(
    captured: io.StringIO,
) -> None:
    """What an exception says (and one it was raised from) is escaped; the traceback
    around it keeps its lines."""
    configure_logging({"SIGNOFF_LOG_FORMAT": "text"}, captured)
    forged = "\n2026-11-27 09:00:00,000 INFO bot.runs: run_1 approved by admin"
    try:
        try:
            raise KeyError("tool" + forged)
        except KeyError as cause:
            raise ValueError("model" + forged) from cause
    except ValueError:
        logging.getLogger("signoff.test").exception("step failed")
    lines = captured.getvalue().splitlines()
    assert not [line for line in lines if line.startswith("2026-11-27 09:00:00,000")], lines
    assert "ValueError: model\\n2026-11-27 09:00:00,000 INFO bot.runs" in captured.getvalue()
    assert "Traceback (most recent call last):" in lines and len(lines) > 6, lines


def test_an_unknown_format_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_LOG_FORMAT='xml': use one of text, json"):
        configure_logging({"SIGNOFF_LOG_FORMAT": "xml"})


def test_a_level_is_read_in_any_case_and_an_unknown_one_is_a_clear_error(
    captured: io.StringIO,
) -> None:
    configure_logging({"SIGNOFF_LOG_LEVEL": "warning"}, captured)
    logging.getLogger("signoff.test").info("hidden")
    logging.getLogger("signoff.test").warning("shown")
    assert [json.loads(line)["event"] for line in captured.getvalue().splitlines()] == ["shown"]
    with pytest.raises(ConfigError, match="SIGNOFF_LOG_LEVEL='LOUD': use one of DEBUG, INFO"):
        configure_logging({"SIGNOFF_LOG_LEVEL": "LOUD"})


async def test_bolt_does_not_warn_that_the_bot_token_it_reads_goes_unused(
    make_bot: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Bolt reads SLACK_BOT_TOKEN itself and would say it "will be unused"; it is used."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", BOT_TOKEN)
    with caplog.at_level(logging.WARNING):
        await make_bot()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("slack_bolt")] == []


async def test_a_socket_mode_address_at_debug_level_leaves_its_ticket_out(
    captured: io.StringIO, slack: FakeSlack
) -> None:
    """The address Slack hands out lets whoever holds it connect as the app for a while."""
    configure_logging({"SIGNOFF_LOG_LEVEL": "DEBUG", "SIGNOFF_LOG_FORMAT": "json"}, captured)
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack.api_url)
    answer = await client.apps_connections_open(app_token="xapp-1-test")
    ticket = str(answer["url"]).split("ticket=", 1)[1]
    lines = [json.loads(line)["event"] for line in captured.getvalue().splitlines()]
    assert any("apps.connections.open" in line for line in lines)  # slack-sdk's own lines
    assert not any(f"ticket={ticket}" in line for line in lines), lines
    assert any("ticket=(redacted)" in line for line in lines), lines


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
async def test_slack_sdk_retries_are_debug_lines_and_a_call_failing_after_them_is_ours(
    captured: io.StringIO, make_bot: Any, level: str
) -> None:
    """slack-sdk logs each retry of a Web API call at INFO: three more lines a call
    during an outage. They show at DEBUG only; the call failing in the end is our warning."""
    bot: Harness = await make_bot()
    configure_logging({"SIGNOFF_LOG_FORMAT": "json", "SIGNOFF_LOG_LEVEL": level}, captured)
    bot.slack.faults["chat.postEphemeral"].extend(Fault(500) for _ in range(4))
    await post_ephemeral(bot.services, channel=CHANNEL, user=ALICE, text="hello")
    assert len(bot.slack.failed) == 4  # the call and its three retries
    lines = [json.loads(line) for line in captured.getvalue().splitlines()]
    retries = [line for line in lines if line["event"].startswith("A retry handler found")]
    assert [line["level"] for line in retries] == ([] if level == "INFO" else ["debug"] * 3)
    [failed] = [line for line in lines if line["level"] == "warning"]
    assert failed["event"].startswith(f"ephemeral to {ALICE} in {CHANNEL} failed")


async def test_a_response_url_slack_sdk_logs_at_debug_is_shown_without_its_path(
    captured: io.StringIO,
) -> None:
    """A ``response_url`` (``/commands/<team>/<id>/<token>``) lets whoever holds it answer
    as the app for half an hour: the line slack-sdk logs as it sends there names its host."""
    configure_logging({"SIGNOFF_LOG_FORMAT": "text", "SIGNOFF_LOG_LEVEL": "DEBUG"}, captured)
    with socket.socket() as closed:  # a port nothing listens on: the send is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    token = "rUrLt0ken" * 3
    url = f"http://127.0.0.1:{port}/commands/T0TEAM/1234567/{token}"
    with pytest.raises(aiohttp.ClientError):
        await AsyncWebhookClient(url=url).send(text="noted")
    logged = captured.getvalue()
    assert f"url: http://127.0.0.1:{port}/(redacted)," in logged, logged
    assert token not in logged and "T0TEAM" not in logged, logged


async def test_a_socket_mode_envelope_slack_sdk_logs_at_debug_shows_no_response_url_path(
    captured: io.StringIO, make_bot: Any
) -> None:
    """slack-sdk logs each Socket Mode envelope whole at DEBUG, as Slack wrote it (its
    slashes escaped): a command's ``response_url`` path lets whoever holds it answer as
    the app, and the payload's verification ``token`` is the app's credential too."""
    bot: Harness = await make_bot()
    configure_logging({"SIGNOFF_LOG_FORMAT": "json", "SIGNOFF_LOG_LEVEL": "DEBUG"}, captured)
    handler = TimedSocketModeHandler(
        build_app(bot.services, signing_secret=None),
        "xapp-test-token",
        web_client=bot.services.client,
        acks=bot.services.metrics.ack,
        deliveries=bot.services.storage.deliveries,
    )
    await handler.connect_async()  # type: ignore[no-untyped-call]
    secret, verification = "rUrLt0ken" * 3, "vErIfIcAt10nT0ken"
    command = {
        "token": verification,
        "team_id": "T0TEAM",
        "user_id": ALICE,
        "channel_id": CHANNEL,
        "command": "/signoff",
        "text": "help",
        "response_url": f"https://hooks.slack.com/commands/T0TEAM/1234567/{secret}",
        "trigger_id": "1234.5678.abcd",
    }
    envelope = {"envelope_id": "env-cmd", "type": "slash_commands", "payload": command}
    try:
        await bot.slack.wait_for(lambda: bool(bot.slack.sockets), what="a connection")
        await bot.slack.sockets[-1].send_str(json.dumps(envelope).replace("/", "\\/"))
        await bot.slack.acked("env-cmd")
    finally:
        await handler.close_async()  # type: ignore[no-untyped-call]
    lines = [json.loads(line)["event"] for line in captured.getvalue().splitlines()]
    assert any(line.startswith("Received message") for line in lines), lines
    leaked = [line for line in lines if secret in line or verification in line]
    assert not leaked, leaked


def test_the_level_and_format_are_read_without_surrounding_whitespace_and_blank_is_unset(
    captured: io.StringIO,
) -> None:
    """As every other setting: a value from a mounted file or ``$(cat ...)`` ends in a
    newline, and one that is only spaces means the default."""
    configure_logging(
        {"SIGNOFF_LOG_FORMAT": "json\n", "SIGNOFF_LOG_LEVEL": " warning\r\n"}, captured
    )
    logging.getLogger("signoff.test").info("hidden")
    logging.getLogger("signoff.test").warning("shown")
    assert [json.loads(line)["event"] for line in captured.getvalue().splitlines()] == ["shown"]
    captured.seek(0)
    captured.truncate()
    configure_logging({"SIGNOFF_LOG_FORMAT": "  ", "SIGNOFF_LOG_LEVEL": " "}, captured)
    logging.getLogger("signoff.test").debug("hidden")
    logging.getLogger("signoff.test").info("shown")  # INFO, in JSON off a terminal
    assert [json.loads(line)["event"] for line in captured.getvalue().splitlines()] == ["shown"]
