"""The Web API client's retries: slack-sdk's own waits unless its backoff is changed, and
none for the start-up checks of the tokens."""

from __future__ import annotations

import logging
import random

import pytest
from fakes import BOT_TOKEN, FakeSlack, Fault
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.handler import default_interval_calculator

from bot.process.settings import Settings
from bot.process.slack_client import close_client, make_client
from bot.process.wiring import open_services

SETTINGS = Settings.from_env({"SLACK_BOT_TOKEN": BOT_TOKEN})
BACKING_OFF = (AsyncConnectionErrorRetryHandler, AsyncServerErrorRetryHandler)


@pytest.mark.parametrize("attempt", [0, 1, 2])
async def test_an_operators_client_waits_between_retries_as_slack_sdk_does(attempt: int) -> None:
    """0.5 s, 1 s, 2 s, each plus up to 1 s of jitter: the same draw, the same wait."""
    client = make_client(SETTINGS)
    try:
        handlers = [h for h in client.retry_handlers if isinstance(h, BACKING_OFF)]
        assert len(handlers) == 2
        for handler in handlers:
            random.seed(attempt)
            ours = handler.interval_calculator.calculate_sleep_duration(attempt)
            random.seed(attempt)
            assert ours == default_interval_calculator.calculate_sleep_duration(attempt)
            assert 0.5 * 2**attempt <= ours < 0.5 * 2**attempt + 1
    finally:
        await close_client(client)


async def test_a_smaller_backoff_scales_every_wait_and_its_jitter() -> None:
    client = make_client(SETTINGS, backoff=0.01)
    try:
        handlers = [h for h in client.retry_handlers if isinstance(h, BACKING_OFF)]
        for handler in handlers:
            for attempt in range(3):
                wait = handler.interval_calculator.calculate_sleep_duration(attempt)
                assert 0.01 * 2**attempt <= wait < 0.01 * 2**attempt + 0.02
    finally:
        await close_client(client)


async def test_start_up_asks_slack_about_each_token_once_and_starts_while_slack_fails(
    slack: FakeSlack, redis_url: str, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A check that Slack does not answer starts the process anyway, so retrying it would
    only hold the start back (about 5 s a token while Slack is out of reach)."""
    settings = Settings.from_env(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_APP_TOKEN": "xapp-test-token",
            "SIGNOFF_SLACK_API_URL": slack.api_url,
            "REDIS_URL": redis_url,
            "SIGNOFF_REDIS_PREFIX": key_prefix,
        }
    )
    for method in ("auth.test", "apps.connections.open"):
        slack.faults[method].extend(Fault(500) for _ in range(4))
    with caplog.at_level(logging.WARNING):
        async with open_services(settings, specs=[], socket_mode=True) as services:
            assert services.client.retry_handlers  # its calls later are retried as ever
    assert [c.method for c in slack.failed] == ["auth.test", "apps.connections.open"]
    warned = [r.getMessage() for r in caplog.records if "not checked" in r.getMessage()]
    assert [line.split(" ", 1)[0] for line in warned] == ["SLACK_BOT_TOKEN", "SLACK_APP_TOKEN"]
