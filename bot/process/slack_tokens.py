"""Start-up checks of the Slack tokens. A token Slack refuses stops the process with one
line naming it, instead of a process that looks healthy and never posts (the bot token)
or retries for ever (the app token). Slack out of reach is no reason to stop: the outbox
posts once it answers. So each token is asked about once, without the client's retries,
which would only delay the start by seconds a token while Slack is out of reach."""

from __future__ import annotations

import logging
from collections.abc import Awaitable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import BotError
from bot.ui.slack_failures import SLACK_FAILURES, why_failed

from .settings import Settings
from .slack_client import close_client, make_client

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


async def check_tokens(settings: Settings, *, socket_mode: bool) -> None:
    """The bot token, and with ``socket_mode`` the app token, each asked about once."""
    client = make_client(settings, retries=0)
    try:
        await _check_bot_token(client)
        if socket_mode and settings.app_token is not None:
            await _check_app_token(client, settings.app_token.get_secret_value())
    finally:
        await close_client(client)


async def _check_bot_token(client: AsyncWebClient) -> None:
    """``auth.test`` with the bot token; BotError when Slack refuses it."""
    await _check(
        client.auth_test(),
        "SLACK_BOT_TOKEN",
        "copy the Bot User OAuth Token (xoxb-...) from the app's OAuth & Permissions page",
    )


async def _check_app_token(client: AsyncWebClient, app_token: str) -> None:
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
