"""HTTP mode's ``/slack/events`` route on aiohttp.

The events route checks the signature before anything else (401) and refuses a body that
is not a well-formed form or payload (400). A click on one of Signoff's buttons skips
Bolt's middleware chain: a decision is appended to the click stream in Redis (one round
trip, ``bot.decisions.clicks.intake``), then answered, so an acknowledged click survives this
process; the deciders of any process decide it. Everything else goes to Bolt. The
route's duration is the ack latency the metrics report.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier
from yarl import URL

from bot.decisions.clicks import intake, signoff_click
from bot.services import Services

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


def add_events_route(
    web_app: web.Application, app: AsyncApp, services: Services, *, signing_secret: str
) -> None:
    """Serve Slack's requests for ``app`` at ``EVENTS_PATH`` of ``web_app``."""
    verifier = SignatureVerifier(signing_secret)
    metrics = services.metrics

    async def events(request: web.Request) -> web.Response:
        started = time.perf_counter()
        body = await request.text()
        if not verifier.is_valid_request(body, dict(request.headers)):
            return web.Response(status=401, text="invalid signature")
        well_formed, payload = parse_body(body, request.content_type)
        if not well_formed:
            return web.Response(status=400, text="malformed body")
        click = signoff_click(payload) if payload is not None else None
        if click is not None:
            await intake(services, click)
            response = web.Response()
        else:
            bolt_request = AsyncBoltRequest(
                body=body,
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
            response = await to_aiohttp_response(await app.async_dispatch(bolt_request))
        metrics.ack.observe(time.perf_counter() - started)
        return response

    web_app.router.add_post(EVENTS_PATH, events)


def parse_body(body: str, content_type: str) -> tuple[bool, dict[str, Any] | None]:
    """Whether the body is well formed, and the interaction payload it carries, if any.

    Well formed: a JSON object (events), or a form carrying a slash ``command`` or a
    ``payload`` that is a JSON object with a type. The form is decoded by yarl's C
    decoder: on the ack path, urllib's ``parse_qs`` cost a sixth of a click's CPU.
    """
    if content_type == "application/json":
        try:
            return isinstance(json.loads(body), dict), None
        except ValueError:
            return False, None
    form = URL.build(query_string=body, encoded=True).query
    if "payload" not in form:
        return "command" in form, None
    try:
        payload = json.loads(form["payload"])
    except ValueError:
        return False, None
    if isinstance(payload, dict) and isinstance(payload.get("type"), str):
        return True, payload
    return False, None
