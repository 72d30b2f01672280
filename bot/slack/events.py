"""HTTP mode's ``/slack/events`` route on aiohttp.

Apart from Slack's certificate check (answered 200, doing nothing), the events route
checks the signature before anything else (401, with a warning at most once a minute)
and refuses a body that is not a request Signoff handles, in the shape Slack sends it
(400; ``bot.slack.requests``).
A click on one of Signoff's buttons skips Bolt's middleware chain: a decision is
appended to the click stream in Redis (one round trip, ``bot.decisions.clicks.intake``),
then answered, so an acknowledged click survives this process; the deciders of any
process decide it. Everything else goes to Bolt. The route's duration is the ack
latency the metrics report.
"""

from __future__ import annotations

import logging
import time

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.decisions.clicks import intake
from bot.services import Services

from .requests import parse_request, signed_text

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"

_CERTIFICATE_CHECK = b"ssl_check=1"
"""How Slack checks a slash command's HTTPS certificate: a form answered with 200, which
reveals and does nothing (Slack may send it unsigned)."""


WARN_EVERY = 60.0
"""Seconds between two warnings about refused signatures: one a minute, not one a request."""


class _BadSignatures:
    """Warns, at most once every ``WARN_EVERY`` seconds, that requests are refused for their
    signature: every request failing, while only the access log said 401, looked like an
    outage; a wrong SLACK_SIGNING_SECRET is the usual cause. Never quotes either."""

    def __init__(self) -> None:
        self._refused = 0
        self._warned_at: float | None = None

    def refused(self) -> None:
        self._refused += 1
        now = time.monotonic()
        if self._warned_at is not None and now - self._warned_at < WARN_EVERY:
            return
        log.warning(
            "refusing requests to %s whose signature is missing, stale or wrong (%d since "
            "%s); if Slack sent them, check SLACK_SIGNING_SECRET (the Signing Secret on the "
            "app's Basic Information page)",
            EVENTS_PATH,
            self._refused,
            "startup" if self._warned_at is None else "the last warning",
        )
        self._refused, self._warned_at = 0, now


def add_events_route(
    web_app: web.Application, app: AsyncApp, services: Services, *, signing_secret: str
) -> None:
    """Serve Slack's requests for ``app`` at ``EVENTS_PATH`` of ``web_app``."""
    verifier = SignatureVerifier(signing_secret)
    metrics = services.metrics
    bad_signatures = _BadSignatures()

    async def events(request: web.Request) -> web.Response:
        started = time.perf_counter()
        body = await request.read()
        if body.startswith(_CERTIFICATE_CHECK):
            return web.Response()
        text = signed_text(verifier, body, request.headers)
        if text is None:
            bad_signatures.refused()
            return web.Response(status=401, text="invalid signature")
        slack = parse_request(text, request.content_type)
        if slack is None:
            log.warning("refused a signed request that is not one Signoff handles")
            return web.Response(status=400, text="malformed body")
        if slack.click is not None:
            await intake(services, slack.click)
            response = web.Response()
        else:
            bolt_request = AsyncBoltRequest(
                body=slack.text,
                query=request.query_string,
                headers=request.headers,  # type: ignore[arg-type]
            )
            response = await to_aiohttp_response(await app.async_dispatch(bolt_request))
        metrics.ack.observe(time.perf_counter() - started)
        return response

    web_app.router.add_post(EVENTS_PATH, events)
