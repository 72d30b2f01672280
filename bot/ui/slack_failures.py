"""Telling Slack's failures apart: one that passes (a network error, a rate limit, an
error on Slack's side) is worth trying again later; a refusal is not."""

from __future__ import annotations

from aiohttp import ClientError
from slack_sdk.errors import SlackApiError

from bot.services.directory import slack_error

SLACK_FAILURES = (SlackApiError, ClientError, TimeoutError, OSError)
"""What a Web API call raises once slack-sdk's own retries are spent."""

NOT_A_MEMBER = frozenset({"not_in_channel", "channel_not_found"})
"""Slack's refusals of a post that most often mean the app is not in the channel."""

_SLACK_HICCUPS = frozenset(
    {"internal_error", "fatal_error", "service_unavailable", "request_timeout", "ratelimited"}
)


def retry_after(exc: BaseException) -> float | None:
    """The seconds a rate-limited Slack call asked to wait, when it was rate limited."""
    if not isinstance(exc, SlackApiError) or exc.response.status_code != 429:
        return None
    headers = {k.lower(): v for k, v in (exc.response.headers or {}).items()}
    value = headers.get("retry-after")
    try:
        return float(value[0] if isinstance(value, list) else value) if value else None
    except ValueError:
        return None


def passing(exc: BaseException) -> bool:
    """Whether Slack may take the same call later: a network error, a rate limit or a
    failure on its side, not a refusal (a deleted message, an archived channel)."""
    if not isinstance(exc, SlackApiError):
        return True
    status = exc.response.status_code
    return status == 429 or status >= 500 or exc.response.get("error") in _SLACK_HICCUPS


def why_failed(exc: BaseException) -> str:
    """A Slack or network failure, in a log line (never the token)."""
    if isinstance(exc, SlackApiError):
        return slack_error(exc)
    return f"{type(exc).__name__}: {exc}"
