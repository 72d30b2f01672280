"""A traceback in the log, as text or JSON, shows none of the secrets an error may quote:
Slack tokens, a URL's credentials and query string, a Slack ``response_url``'s path."""

from __future__ import annotations

import io
import json
import logging

import aiohttp
import pytest

from bot.process.logs import configure_logging
from bot.process.redaction import redacted
from bot.services.background import Background

SECRETS = {
    tag: {
        "path": f"T0{tag.upper()}/1234567/{tag}Hq3vX8mZ2kP7wR5n",
        "token": f"{tag}-2k4j6h8g0f",
        "password": f"{tag}-pw-9d8c7b6a",
        "query": f"{tag}-q-5e4d3c2b",
    }
    for tag in ("said", "cause")
}


def _saying(tag: str) -> str:
    secret = SECRETS[tag]
    return (
        f"{tag}: https://hooks.slack.com/commands/{secret['path']} refused "
        f"xoxb-{secret['token']}; redis://signoff:{secret['password']}@redis.internal:6379/0 "
        f"down; callback https://ci.example/hook?token={secret['query']}#top not taken"
    )


def _shown(tag: str) -> str:
    return (
        f"{tag}: https://hooks.slack.com/(redacted) refused xoxb-(redacted); "
        "redis://redis.internal:6379/0 down; callback https://ci.example/hook not taken"
    )


def _raise_chained() -> None:
    try:
        raise ConnectionError(_saying("cause"))
    except ConnectionError as cause:
        raise RuntimeError(_saying("said")) from cause


def _assert_redacted(traceback: str) -> None:
    """No secret of either error shows; the rest of the traceback does."""
    for secret in (value for said in SECRETS.values() for value in said.values()):
        assert secret not in traceback, traceback
    assert "T0SAID" not in traceback and "T0CAUSE" not in traceback, traceback
    assert traceback.count("Traceback (most recent call last):") == 2, traceback
    assert "in _raise_chained" in traceback, traceback
    assert "The above exception was the direct cause of the following exception" in traceback
    assert f"ConnectionError: {_shown('cause')}\n" in traceback, traceback
    assert traceback.endswith(f"RuntimeError: {_shown('said')}"), traceback


@pytest.mark.parametrize("how", ["exception", "exc_info"])
def test_a_json_error_shows_no_secret_its_exceptions_quote(captured: io.StringIO, how: str) -> None:
    configure_logging({"SIGNOFF_LOG_FORMAT": "json"}, captured)
    log = logging.getLogger("signoff.test")
    try:
        _raise_chained()
    except RuntimeError as error:
        if how == "exception":
            log.exception("posting failed")
        else:
            log.error("posting failed", exc_info=error)
    [line] = (json.loads(line) for line in captured.getvalue().splitlines())
    assert line["event"] == "posting failed"
    _assert_redacted(line["error"])


def test_a_text_traceback_shows_no_secret_its_exceptions_quote(captured: io.StringIO) -> None:
    configure_logging({"SIGNOFF_LOG_FORMAT": "text"}, captured)
    try:
        _raise_chained()
    except RuntimeError:
        logging.getLogger("signoff.test").exception("posting failed")
    first, traceback = captured.getvalue().rstrip("\n").split("\n", 1)
    assert first.endswith(" ERROR signoff.test: posting failed"), first
    _assert_redacted(traceback)


def test_a_traceback_another_formatter_cached_and_a_stack_are_shown_redacted(
    captured: io.StringIO,
) -> None:
    """The standard formatter keeps the traceback it made on the record, for the handlers
    after it: the text formatter makes its own instead of showing that one."""
    configure_logging({"SIGNOFF_LOG_FORMAT": "text"}, captured)
    plain = logging.StreamHandler(io.StringIO())
    logging.getLogger().handlers.insert(0, plain)  # formats the record first
    try:
        _raise_chained()
    except RuntimeError:
        logging.getLogger("signoff.test").exception("posting failed")
    assert SECRETS["said"]["token"] in plain.stream.getvalue()  # it did cache one
    _assert_redacted(captured.getvalue().rstrip("\n").split("\n", 1)[1])
    stack = f"Stack (most recent call last):\n  {_saying('said')}"
    log = logging.getLogger("signoff.test")
    log.handle(log.makeRecord(log.name, logging.INFO, __file__, 1, "here", (), None, sinfo=stack))
    assert captured.getvalue().endswith(
        f"here\nStack (most recent call last):\n  {_shown('said')}\n"
    )


@pytest.mark.parametrize("form", ["json", "text"])
async def test_a_url_aiohttp_quotes_in_a_failed_background_task_is_logged_without_secrets(
    captured: io.StringIO, unanswered_port: int, form: str
) -> None:
    """aiohttp names the whole URL in a connect timeout: here a ``response_url``'s, whose
    path lets whoever holds it answer as the app, with a query string too."""
    configure_logging({"SIGNOFF_LOG_FORMAT": form}, captured)
    token = "rUrLt0ken" * 3
    place = f"http://127.0.0.1:{unanswered_port}"
    url = f"{place}/commands/T0TEAM/1234567/{token}?ticket=t1ck3t"
    said: list[str] = []

    async def respond() -> None:
        timeout = aiohttp.ClientTimeout(total=10, connect=0.3)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            try:
                await session.post(url)
            except aiohttp.ConnectionTimeoutError as error:
                said.append(str(error))
                raise

    background = Background()
    background.spawn(respond(), name="respond to U0ALICE")
    await background.idle()
    assert said and token in said[0] and "t1ck3t" in said[0], said  # what aiohttp says
    logged = captured.getvalue()
    assert "background task respond to U0ALICE failed" in logged, logged
    assert f"ConnectionTimeoutError: Connection timeout to host {place}/(redacted)" in logged
    for secret in (token, "T0TEAM", "t1ck3t"):
        assert secret not in logged, logged


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "The request to the Slack API failed. (url: https://slack.com/api/chat.postMessage)",
            "The request to the Slack API failed. (url: https://slack.com/api/chat.postMessage)",
        ),
        (
            "copy the bot token (xoxb-...) from the app",
            "copy the bot token (xoxb-...) from the app",
        ),
        (
            "posting to https://hooks.slack.com/services/T0/B0/s3cr3t",
            "posting to https://hooks.slack.com/(redacted)",
        ),
        (
            "url='wss://wss-primary.slack.com/link/?ticket=abc&app_id=A1'",
            "url='wss://wss-primary.slack.com/link/'",
        ),
        ("xapp-1-A0-123-abc and xoxe.xoxp-1-abc", "xapp-(redacted) and xoxe.xoxp-(redacted)"),
    ],
)
def test_a_traceback_keeps_what_is_no_secret(text: str, shown: str) -> None:
    """A Web API method's URL keeps its path, a hint naming a token's kind stays."""
    assert redacted(text) == shown
