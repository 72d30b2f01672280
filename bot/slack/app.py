"""The Bolt app: every Signoff listener registered on one ``AsyncApp``.

``process_before_response=True``: Bolt runs a listener and answers Slack when it
returns, instead of polling every 10 ms for the ack. Each listener acks first and hands
slow work to ``Background``, so the answer leaves in about a millisecond.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.logger.messages import warning_client_prioritized_and_token_skipped
from slack_sdk.web.async_client import AsyncWebClient

from bot.decisions import clicks, submissions
from bot.services import Services
from bot.ui import ids

from . import commands
from .joined import joined_listener

_BUTTONS = re.compile(
    "^("
    + "|".join(re.escape(a) for a in (*ids.BUTTONS, *ids.BATCH_BUTTONS))
    + rf"|{re.escape(ids.CHOOSE)}(\.\d+)?)$"
)
_BATCH_PICKS = re.compile(rf"^{re.escape(ids.BATCH_PICK)}\.\d+$")
"""A tick on a batch card: read only when "Approve selected" is clicked."""
_MODALS = re.compile(
    "^(" + "|".join(re.escape(v) for v in (ids.EDIT_VIEW, ids.DENY_VIEW, ids.REPLY_VIEW)) + ")$"
)


def build_app(services: Services, *, signing_secret: str | None) -> AsyncApp:
    """The app; ``signing_secret`` None (Socket Mode) turns request signing checks off."""
    token = services.client.token

    async def authorize(enterprise_id: str | None, team_id: str | None) -> AuthorizeResult:
        # The workspace's own bot token, with no Web API call: Bolt's default asks Slack
        # (auth.test) on a process's first request, so a Slack outage then failed commands.
        return AuthorizeResult(enterprise_id=enterprise_id, team_id=team_id, bot_token=token)

    logging.getLogger("slack_bolt.AsyncApp").addFilter(_token_not_unused)
    app = AsyncApp(
        client=_without_token(services.client),
        authorize=authorize,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        process_before_response=True,
        ssl_check_enabled=False,
        url_verification_enabled=True,
    )
    app.action(_BUTTONS)(clicks.listener(services))
    app.action(ids.OPEN_PENDING)(_ack_only)
    app.action(_BATCH_PICKS)(_ack_only)
    app.action(ids.NEXT_PAGE)(commands.page_listener(services))
    app.action(ids.HOME_OPEN_PAGE)(commands.page_listener(services))
    app.action(ids.REVOKE_TRUST)(commands.revoke_listener(services))
    app.action(re.compile(f"^({re.escape(ids.HOME_APPROVE)}|{re.escape(ids.HOME_DENY)})$"))(
        commands.home_decision_listener(services)
    )
    app.view(_MODALS)(submissions.listener(services))
    app.view_closed(re.compile(".*"))(_ack_only)
    app.command("/signoff")(commands.command_listener(services))
    app.event("app_mention")(commands.mention_listener(services))
    app.event("app_home_opened")(commands.home_listener(services))
    app.event("member_joined_channel")(joined_listener(services))
    return app


def _token_not_unused(record: logging.LogRecord) -> bool:
    """Drops Bolt's warning that SLACK_BOT_TOKEN, which it reads itself, "will be unused"
    beside our client: ``authorize`` gives Bolt that very token, so the warning misleads."""
    return record.getMessage() != warning_client_prioritized_and_token_skipped()


def _without_token(client: AsyncWebClient) -> AsyncWebClient:
    """``client``'s settings and HTTP session, without its token: Bolt gets the token from
    ``authorize`` alone, so it does not warn that the bot token "will be ignored"."""
    return AsyncWebClient(
        base_url=client.base_url,
        timeout=client.timeout,
        ssl=client.ssl,
        proxy=client.proxy,
        session=client.session,
        trust_env_in_session=client.trust_env_in_session,
        headers=client.headers,
        logger=client.logger,
        retry_handlers=list(client.retry_handlers),
    )


async def _ack_only(ack: AsyncAck, body: dict[str, Any]) -> None:
    await ack()
