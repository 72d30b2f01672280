"""Requests as Slack signs and sends them to the bot: button clicks, modal submissions,
slash commands and Events API deliveries, each with a fresh trigger id."""

from __future__ import annotations

import itertools
import json
import time
import urllib.parse
from typing import Any

from fake_slack import BOT_USER

from sandbox.signing import signature_headers

SIGNING_SECRET = "test-signing-secret"


def sign(
    body: str, *, timestamp: int | None = None, secret: str = SIGNING_SECRET
) -> dict[str, str]:
    """Headers Slack sends with ``body``: a v0 signature over a current timestamp."""
    headers = signature_headers(secret, body.encode(), timestamp=timestamp)
    return {**headers, "Content-Type": "application/x-www-form-urlencoded"}


_TRIGGERS = itertools.count(1)


def trigger_id() -> str:
    """A fresh trigger id: Slack gives each command and interaction its own, so no two of
    its signed requests are the same bytes (one received twice is refused as a replay)."""
    return f"trig.{next(_TRIGGERS)}"


def form_body(payload: dict[str, Any]) -> str:
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


def click_payload(
    *,
    action_id: str,
    value: str,
    user: str,
    channel: str,
    message_ts: str,
) -> dict[str, Any]:
    """A ``block_actions`` payload as Slack sends it for a button click."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "team": {"id": "T0TEST", "domain": "test"},
        "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
        "channel": {"id": channel, "name": "ops"},
        "message": {"ts": message_ts, "text": "", "blocks": []},
        "response_url": "https://hooks.slack.invalid/actions/1",
        "trigger_id": trigger_id(),
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "signoff.decide",
                "value": value,
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def command_body(*, text: str, user: str, channel: str) -> str:
    """The form body Slack sends for ``/signoff <text>``."""
    return urllib.parse.urlencode(
        {
            "token": "unused",
            "team_id": "T0TEST",
            "team_domain": "test",
            "channel_id": channel,
            "channel_name": "ops",
            "user_id": user,
            "user_name": user.lower(),
            "command": "/signoff",
            "text": text,
            "api_app_id": "A0TEST",
            "response_url": "https://hooks.slack.invalid/commands/1",
            "trigger_id": trigger_id(),
        }
    )


def event_body(event: dict[str, Any], *, event_id: str | None = None) -> str:
    """The JSON body of an Events API delivery of ``event`` (a fresh ``event_id`` unless
    given), in Slack's envelope: the one installation that sees it, with the bot's user."""
    return json.dumps(
        {
            "token": "unused",
            "team_id": "T0TEST",
            "context_team_id": "T0TEST",
            "context_enterprise_id": None,
            "api_app_id": "A0TEST",
            "type": "event_callback",
            "event_id": event_id or f"Ev{time.time_ns()}",
            "event_time": int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": "T0TEST",
                    "user_id": BOT_USER,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": "4-eyJldCI6ImFwcF9tZW50aW9uIiwidGlkIjoiVDBURVNUIn0",
            "event": event,
        }
    )


def home_click_payload(*, user: str, action_id: str, value: str) -> dict[str, Any]:
    """A ``block_actions`` payload for a button in App Home (the container is the view)."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": user.lower(), "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "team": {"id": "T0TEST", "domain": "test"},
        "container": {"type": "view", "view_id": "V0HOME"},
        "view": {"id": "V0HOME", "type": "home", "blocks": []},
        "trigger_id": trigger_id(),
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "home",
                "value": value,
                "action_ts": "1700000000.000001",
            }
        ],
    }


def submit_payload(
    *, callback_id: str, metadata: str, user: str, text: str | None
) -> dict[str, Any]:
    """A ``view_submission`` payload for one of the bot's modals."""
    return {
        "type": "view_submission",
        "user": {"id": user, "username": user.lower(), "team_id": "T0TEST"},
        "api_app_id": "A0TEST",
        "team": {"id": "T0TEST", "domain": "test"},
        "trigger_id": trigger_id(),
        "view": {
            "id": "V0TEST",
            "type": "modal",
            "callback_id": callback_id,
            "private_metadata": metadata,
            "state": {"values": {"input": {"text": {"type": "plain_text_input", "value": text}}}},
        },
    }
