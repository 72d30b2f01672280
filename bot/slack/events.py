"""HTTP mode's ``/slack/events`` route on aiohttp.

Apart from Slack's certificate check (answered 200, doing nothing), the events route
checks the signature before anything else (401, with a warning at most once a minute)
and refuses a body that is not a request Signoff handles, in the shape Slack sends it
(400; ``bot.slack.requests``). A command or an interaction received a second time,
signature and all, is a replay (Slack sends each once, with its own ``trigger_id``):
401, with a warning at most once a minute; events have their own retries, deduplicated
by ``event_id``.
A decision click on one of Signoff's buttons skips Bolt's middleware chain and the
replay check: it is appended to the click stream in Redis (one round trip,
``bot.decisions.clicks.intake``), then answered, so an acknowledged click survives this
process; the deciders of any process decide it, once per trigger id, so a replayed click
decides nothing. Everything else goes to Bolt. The route's duration is the ack latency
the metrics report.
"""

from __future__ import annotations

import logging
import time

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.decisions.clicks import intake, streamed
from bot.services import Services

from .rare_warnings import RareWarning
from .replays import ReplayCheck
from .requests import parse_request, signed_text

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"

CERTIFICATE_CHECK = b"ssl_check=1"
"""How Slack checks a slash command's HTTPS certificate: a form answered with 200, which
reveals and does nothing (Slack may send it unsigned)."""


BAD_SIGNATURE = (
    "whose signature is missing, stale or wrong (%d since %s); if Slack sent them, check "
    "SLACK_SIGNING_SECRET (the Signing Secret on the app's Basic Information page)"
)
"""Every request failing, while only the access log said 401, looked like an outage."""
REPLAYED = (
    "that were received before, signature and all (%d since %s): Slack sends each once, so "
    "someone is sending captured requests again"
)


def add_events_route(
    web_app: web.Application, app: AsyncApp, services: Services, *, signing_secret: str
) -> None:
    """Serve Slack's requests for ``app`` at ``EVENTS_PATH`` of ``web_app``."""
    verifier = SignatureVerifier(signing_secret)
    metrics = services.metrics
    bad_signatures = RareWarning(log, f"refusing requests to {EVENTS_PATH} " + BAD_SIGNATURE)
    replays = RareWarning(log, f"refusing requests to {EVENTS_PATH} " + REPLAYED)
    replay_check = ReplayCheck()

    async def events(request: web.Request) -> web.Response:
        started = time.perf_counter()
        try:
            body = await request.read()
        except web.RequestPayloadError:  # not in the Content-Encoding it names: not Slack's
            refusal = web.Response(status=400, text="the body is not in its content encoding")
            refusal.force_close()  # where the body ends is unknown: nothing more is read
            request.content.feed_eof()
            return refusal
        if body.startswith(CERTIFICATE_CHECK):
            return web.Response()
        text = signed_text(verifier, body, request.headers)
        if text is None:
            bad_signatures.happened()
            return web.Response(status=401, text="invalid signature")
        slack = parse_request(text, request.content_type)
        if slack is None:
            log.warning("refused a signed request that is not one Signoff handles")
            return web.Response(status=400, text="malformed body")
        if slack.click is not None and streamed(slack.click):
            await intake(services, slack.click)  # decided once per trigger id, replays too
            response = web.Response()
        elif request.content_type != "application/json" and not await replay_check.first_time(
            services.storage.deliveries.first_signed(request.headers["X-Slack-Signature"])
        ):
            replays.happened()
            return web.Response(status=401, text="request received before")
        elif slack.click is not None:
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
