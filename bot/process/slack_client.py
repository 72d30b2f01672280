"""The Slack Web API client: retries on connection errors, rate limits and server errors.

The rate-limit handler sleeps inside the call for ``Retry-After``, which is why no Web API
call ever runs before a listener's ``ack()``; it does so only when Slack asks for at most
``MAX_RATE_LIMIT_WAIT``. A longer wait raises the rate-limit error to the caller, so a
card to post goes back to the outbox for later instead of holding its post for a minute.
Each retry is a DEBUG line; a call that fails after its retries is logged by its caller.
"""

from __future__ import annotations

import logging
import random

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.http_retry.builtin_interval_calculators import BackoffRetryIntervalCalculator
from slack_sdk.http_retry.jitter import Jitter
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from .settings import Settings

SLACK_API_URL = "https://slack.com/api/"
MAX_RATE_LIMIT_WAIT = 10.0
"""The longest ``Retry-After`` slept out inside a call, in seconds."""


class _RetriesAtDebug(logging.Filter):
    """slack-sdk logs each retry at INFO ("A retry handler found: ..."), meaning DEBUG (it
    checks the logger's own level, which is unset, not the level in effect): three lines
    more for each call while Slack is down. This keeps them for DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.getMessage().startswith("A retry handler found"):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return CLIENT_LOG.isEnabledFor(logging.DEBUG)


CLIENT_LOG = logging.getLogger("slack_sdk.web.async_base_client")
"""The Web API client's logger (slack-sdk's default for it)."""
CLIENT_LOG.addFilter(_RetriesAtDebug())


class _ScaledJitter(Jitter):
    """Adds a random wait of up to ``most`` seconds (slack-sdk's own jitter adds up to 1 s)."""

    def __init__(self, most: float) -> None:
        self.most = most

    def recalculate(self, duration: float) -> float:
        return duration + random.random() * self.most


class BoundedRateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """slack-sdk's rate-limit retry, for waits of at most ``MAX_RATE_LIMIT_WAIT``."""

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        waits = [v for k, vs in response.headers.items() if k.lower() == "retry-after" for v in vs]
        try:
            return float(waits[0]) <= MAX_RATE_LIMIT_WAIT if waits else True
        except ValueError:
            return True


def make_client(
    settings: Settings, *, retries: int = 3, timeout: int = 10, backoff: float = 0.5
) -> AsyncWebClient:
    """A client for ``settings``' token and API URL, with slack-sdk's retry handlers.

    A connection error or a 5xx is retried after ``backoff`` seconds, doubling with each
    retry, plus a jitter of up to twice ``backoff``. It keeps one HTTP session (connections
    are reused across calls); call inside the event loop, and ``close_client`` at shutdown.
    """
    token = settings.bot_token.get_secret_value() if settings.bot_token else None
    pacing = BackoffRetryIntervalCalculator(backoff, _ScaledJitter(2 * backoff))
    return AsyncWebClient(
        token=token,
        base_url=settings.slack_api_url or SLACK_API_URL,
        timeout=timeout,
        session=aiohttp.ClientSession(),
        logger=CLIENT_LOG,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=retries, interval_calculator=pacing),
            BoundedRateLimitRetry(max_retry_count=retries),
            AsyncServerErrorRetryHandler(max_retry_count=retries, interval_calculator=pacing),
        ],
    )


async def close_client(client: AsyncWebClient) -> None:
    """Close the client's HTTP session."""
    if client.session is not None and not client.session.closed:
        await client.session.close()
