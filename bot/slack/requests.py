"""What a request to ``/slack/events`` must be before anything reads it: signed by Slack,
UTF-8, and shaped like one of the requests Signoff handles (a Socket Mode envelope's
payload too).

Slack's own requests always fit; anything else is refused here, with 401 (not signed)
or 400 (signed but malformed), so neither Bolt nor a listener meets a payload it would
trip over. The form is decoded by yarl's C decoder: on the ack path, urllib's
``parse_qs`` cost a sixth of a click's CPU.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from slack_sdk.signature import SignatureVerifier
from yarl import URL

from bot.decisions.clicks import signoff_click
from bot.decisions.payloads import Click

SlackId = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.:\-]{1,128}$")]


class _Shape(BaseModel):
    """Only the fields Bolt or a listener reads are checked; Slack adds others freely."""

    model_config = ConfigDict(extra="allow")


class _Team(_Shape):
    id: str | None = None
    enterprise_id: str | None = None


class _User(_Shape):
    id: SlackId
    team_id: str | None = None


class _Channel(_Shape):
    id: SlackId


class _Authorization(_Shape):
    team_id: str | None = None
    enterprise_id: str | None = None
    is_enterprise_install: bool | None = None


class _Common(_Shape):
    """Fields Bolt reads from any payload to build its context."""

    team: _Team | str | None = None
    enterprise: _Team | str | None = None
    authorizations: list[_Authorization] | None = None
    is_enterprise_install: bool | None = None
    is_ext_shared_channel: bool | None = None
    team_id: str | None = None
    enterprise_id: str | None = None


class _Action(_Shape):
    action_id: str
    block_id: str | None = None
    value: str | None = None


class _BlockActions(_Common):
    type: Literal["block_actions"]
    user: _User
    actions: list[_Action] = Field(min_length=1)
    channel: _Channel | None = None
    container: dict[str, Any] | None = None
    trigger_id: str | None = None


class _View(_Shape):
    type: Literal["modal"]
    id: str | None = None
    callback_id: str
    private_metadata: str = ""
    state: dict[str, Any] | None = None
    app_installed_team_id: str | None = None
    team_id: str | None = None


class _ViewPayload(_Common):
    type: Literal["view_submission", "view_closed"]
    user: _User
    view: _View


class _Command(_Shape):
    command: str
    user_id: str = Field(pattern=r"^[UW][A-Z0-9]{2,20}$")
    channel_id: SlackId
    text: str = ""
    team_id: str | None = None


class _Event(_Shape):
    type: str
    user: str | _User | None = None
    channel: str | _Channel | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    team: str | None = None
    user_team: str | None = None
    tab: str | None = None
    subtype: str | None = None
    channel_type: str | None = None
    bot_id: str | None = None
    message: dict[str, Any] | None = None
    previous_message: dict[str, Any] | None = None


class _EventCallback(_Common):
    type: Literal["event_callback"]
    event: _Event
    event_id: SlackId | None = None


class _UrlVerification(_Shape):
    type: Literal["url_verification"]
    challenge: str


_PAYLOADS: dict[str, type[_Shape]] = {
    "block_actions": _BlockActions,
    "view_submission": _ViewPayload,
    "view_closed": _ViewPayload,
}
_EVENTS: dict[str, type[_Shape]] = {
    "event_callback": _EventCallback,
    "url_verification": _UrlVerification,
}


@dataclass(frozen=True, kw_only=True)
class SlackRequest:
    """A signed, well-formed request: its text for Bolt, or the click on one of Signoff's
    buttons it carries (validated as such, and never handed to Bolt)."""

    text: str
    click: Click | None = None


def signed_text(verifier: SignatureVerifier, body: bytes, headers: Mapping[str, str]) -> str | None:
    """The body as text when Slack signed it, else None (unsigned, badly signed, stale, a
    malformed timestamp or signature, or not UTF-8: Slack's bodies always are)."""
    try:
        text = body.decode("utf-8")
        return text if verifier.is_valid_request(text, headers) else None
    except (UnicodeDecodeError, ValueError, TypeError):
        return None


def parse_request(text: str, content_type: str) -> SlackRequest | None:
    """The request when it is one Signoff handles, with the shape Slack gives it; else None.

    JSON bodies are events; forms carry a slash ``command`` or an interaction ``payload``.
    """
    if content_type == "application/json":
        body = _json_object(text)
        model = _EVENTS.get(str(body.get("type"))) if body is not None else None
        return SlackRequest(text=text) if model and _fits(model, body) else None
    form = URL.build(query_string=text, encoded=True).query
    if "payload" not in form:
        return SlackRequest(text=text) if _fits(_Command, dict(form)) else None
    payload = _json_object(form["payload"])
    if payload is None:
        return None
    click = signoff_click(payload)
    if click is not None:
        return SlackRequest(text=text, click=click)
    model = _PAYLOADS.get(str(payload.get("type")))
    return SlackRequest(text=text) if model is not None and _fits(model, payload) else None


def envelope_fits(kind: str, payload: object) -> bool:
    """Whether a Socket Mode envelope's ``payload`` (of type ``kind``) has the shape
    ``parse_request`` requires of the same request over HTTP; a click on Signoff's
    buttons, and a command's typed fields, too have the shape Bolt reads, as Bolt builds
    its context from them here."""
    if not isinstance(payload, dict):
        return False
    if kind == "slash_commands":  # JSON here, not a form: Bolt's context fields checked too
        return _fits(_Command, payload) and _fits(_Common, payload)
    models = {"interactive": _PAYLOADS, "events_api": _EVENTS}.get(kind, {})
    model = models.get(str(payload.get("type")))
    return model is not None and _fits(model, payload)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # deep nesting is not Slack's
        return None
    return value if isinstance(value, dict) else None


def _fits(model: type[_Shape], value: Any) -> bool:
    try:
        model.model_validate(value)
    except (ValidationError, RecursionError):
        return False
    return True
