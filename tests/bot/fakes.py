"""Fakes for the bot's tests, in one place: a local Slack Web API that records every call,
signed interaction requests, and a clock and a model the tests control."""

from deterministic import ManualClock, OneToolModel
from fake_slack import BAD_GATEWAY, BOT_TOKEN, BOT_USER, Call, FakeSlack, Fault
from slack_requests import (
    SIGNING_SECRET,
    click_payload,
    command_body,
    event_body,
    form_body,
    home_click_payload,
    sign,
    submit_payload,
    trigger_id,
)

__all__ = [
    "BAD_GATEWAY",
    "BOT_TOKEN",
    "BOT_USER",
    "SIGNING_SECRET",
    "Call",
    "FakeSlack",
    "Fault",
    "ManualClock",
    "OneToolModel",
    "click_payload",
    "command_body",
    "event_body",
    "form_body",
    "home_click_payload",
    "sign",
    "submit_payload",
    "trigger_id",
]
