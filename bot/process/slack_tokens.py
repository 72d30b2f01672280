"""Start-up checks of the Slack tokens. A token Slack refuses stops the process with one
line naming it, instead of a process that looks healthy and never posts (the bot token)
or retries for ever (the app token). Slack out of reach is no reason to stop: the outbox
posts once it answers."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import BotError
from bot.ui.slack_failures import SLACK_FAILURES, why_failed

log = logging.getLogger(__name__)

REFUSED = frozenset(
    {
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "token_expired",
        "not_allowed_token_type",
    }
)
"""Slack's answers that mean the token itself is wrong, not that Slack is unwell."""


async def check_bot_token(client: AsyncWebClient) -> None:
    """``auth.test`` with the bot token; BotError when Slack refuses it."""
    await _check(
        client.auth_test(),
        "SLACK_BOT_TOKEN",
        "copy the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions page",
    )


async def check_app_token(client: AsyncWebClient, app_token: str) -> None:
    """``apps.connections.open`` with the app-level token; BotError when Slack refuses it."""
    await _check(
        client.apps_connections_open(app_token=app_token),
        "SLACK_APP_TOKEN",
        "make an app-level token (xapp-...) with the connections:write scope under the "
        "app's Basic Information",
    )


async def _check(call: Awaitable[object], name: str, fix: str) -> None:
    try:
        await call
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error in REFUSED:
            raise BotError(f"{name}: Slack refused it ({error}); {fix}") from None
        log.warning("%s not checked: Slack answered %s; starting anyway", name, why_failed(exc))
    except SLACK_FAILURES as exc:
        log.warning(
            "%s not checked: Slack not reached (%s); starting anyway", name, why_failed(exc)
        )
