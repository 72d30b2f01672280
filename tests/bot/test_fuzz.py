"""Fuzzing ``/slack/events`` over real HTTP: Hypothesis builds signed and unsigned
requests from every payload type the bot handles (forms and JSON), with fields replaced
or removed, bad encodings, odd headers and deep nesting. Whatever arrives: no 5xx, no
traceback in the log, and the stored request is unchanged."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import json
import logging
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pytest
from fakes import SIGNING_SECRET, click_payload, event_body, submit_payload
from harness import Harness
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.slack.events import CERTIFICATE_CHECK, EVENTS_PATH
from bot.ui import ids

MALLORY = "U0MALLORY"  # not an approver: nothing she sends may decide anything
FORM = "application/x-www-form-urlencoded"

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


@dataclass(frozen=True)
class Sent:
    """One request: the body, its content type, and how it is signed."""

    body: bytes
    content_type: str
    signing: str  # "signed", or how the signature headers are wrong


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        found.append((*prefix, key))
        found += _paths(child, (*prefix, key))
    return found


@st.composite
def _mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with up to three fields replaced by any JSON value or removed."""
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 3))):
        paths = _paths(value)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            parent[path[-1]] = draw(JSON)
        else:
            parent.pop(path[-1])
    return value


def interaction_payloads(value: str, ts: str) -> list[dict[str, Any]]:
    """A click on each of a card's buttons, each form submitted and one closed, as Mallory
    sends them, for request ``value`` on message ``ts``."""
    clicks = [
        click_payload(action_id=a, value=value, user=MALLORY, channel="C0OPS", message_ts=ts)
        for a in (ids.APPROVE, ids.DENY, ids.EDIT, ids.REPLY, ids.FULL_ARGS, ids.OPEN_PENDING)
    ]
    views = [
        submit_payload(callback_id=c, metadata=value, user=MALLORY, text=t)
        for c, t in (
            (ids.EDIT_VIEW, '{"paths": []}'),
            (ids.DENY_VIEW, "no"),
            (ids.REPLY_VIEW, "hi"),
        )
    ]
    closed = {**views[0], "type": "view_closed"}
    return [*clicks, *views, closed]


def _interactions(value: str, ts: str) -> st.SearchStrategy[Sent]:
    payloads = st.sampled_from(interaction_payloads(value, ts)).flatmap(_mutated)
    forms = payloads.map(lambda p: urllib.parse.urlencode({"payload": json.dumps(p)}))
    return forms.map(lambda body: Sent(body.encode(), FORM, "signed"))


def _commands() -> st.SearchStrategy[Sent]:
    fields = st.fixed_dictionaries(
        {},
        optional={
            "command": st.sampled_from(["/signoff", ""]) | st.text(max_size=8),
            "user_id": st.sampled_from([MALLORY, ""]) | st.text(max_size=12),
            "channel_id": st.sampled_from(["C0OPS"]) | st.text(max_size=12),
            "text": st.sampled_from(["", "help", "list"]) | st.text(max_size=20),
            "trigger_id": st.text(max_size=8),
        },
    )
    return fields.map(lambda f: Sent(urllib.parse.urlencode(f).encode(), FORM, "signed"))


def _events() -> st.SearchStrategy[Sent]:
    bases = [
        json.loads(
            event_body(
                {
                    "type": "app_mention",
                    "user": MALLORY,
                    "text": "<@U0BOT> hi",
                    "channel": "C0OPS",
                    "ts": "1.2",
                }
            )
        ),
        json.loads(event_body({"type": "app_home_opened", "user": MALLORY, "tab": "home"})),
        {"type": "url_verification", "challenge": "abc", "token": "unused"},
    ]
    bodies = st.sampled_from(bases).flatmap(_mutated).map(json.dumps)
    return bodies.map(lambda body: Sent(body.encode(), "application/json", "signed"))


def _odd_bodies() -> st.SearchStrategy[Sent]:
    deep = st.integers(100, 3000).map(lambda n: ("payload=" + "%5B" * n).encode())
    nested_edit = st.integers(100, 2400).map(
        lambda n: urllib.parse.urlencode(
            {
                "payload": json.dumps(
                    submit_payload(
                        callback_id=ids.EDIT_VIEW,
                        metadata="x",
                        user=MALLORY,
                        text="[" * n + "]" * n,
                    )
                )
            }
        ).encode()
    )
    raw = st.binary(max_size=200)
    latin = st.text(max_size=50).map(lambda t: t.encode("utf-16"))
    types = st.sampled_from([FORM, "application/json", "text/plain; charset=klingon", ""])
    return st.builds(Sent, st.one_of(deep, nested_edit, raw, latin), types, st.just("signed"))


REQUESTS = st.builds(
    lambda sent, signing: Sent(sent.body, sent.content_type, signing),
    st.one_of(_commands(), _events(), _odd_bodies()),
    st.sampled_from(["signed"] * 4 + ["none", "wrong_secret", "bad_timestamp", "odd_signature"]),
)


def _headers(sent: Sent, timestamp: str) -> dict[str, str]:
    """Slack's signature headers for ``sent``, or the wrong ones its ``signing`` names."""
    headers: dict[str, str] = {}
    if sent.signing == "wrong_secret":
        headers = _signature("not-the-secret", sent.body)
    elif sent.signing != "none":
        headers = _signature(SIGNING_SECRET, sent.body)
    if sent.signing == "bad_timestamp":
        headers["X-Slack-Request-Timestamp"] = timestamp
    elif sent.signing == "odd_signature":
        headers["X-Slack-Signature"] = "v0=\u00e9\u00e9"
    return {**headers, "Content-Type": sent.content_type}


def _signature(secret: str, body: bytes) -> dict[str, str]:
    """The v0 signature over the raw bytes, as Slack computes it (any bytes, not only UTF-8)."""
    stamp = str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest.hexdigest()}"}


async def _send(bot: Harness, sent: Sent, timestamp: str) -> int:
    headers = _headers(sent, timestamp)
    async with bot.http.post(bot.url + EVENTS_PATH, data=sent.body, headers=headers) as r:
        await r.read()
        return r.status


async def test_no_request_gets_a_5xx_or_a_traceback_or_changes_a_stored_request(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    key = bot.services.storage.keys.record(bot.record_id(value))
    before = await bot.services.storage.client.raw.hgetall(key)
    caplog.set_level(logging.WARNING)
    loop = asyncio.get_running_loop()
    statuses: list[int] = []
    interactions = _interactions(value, bot.message_ts())

    @settings(max_examples=1000, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        sent=st.one_of(
            REQUESTS,
            st.builds(
                Sent,
                interactions.map(lambda s: s.body),
                st.just(FORM),
                st.sampled_from(["signed", "signed", "none"]),
            ),
        ),
        timestamp=st.sampled_from(["", "abc", "1.5", "-1", "9" * 30, "\u0661\u0662"]),
    )
    def post(sent: Sent, timestamp: str) -> None:
        status = asyncio.run_coroutine_threadsafe(_send(bot, sent, timestamp), loop).result(30)
        statuses.append(status)
        assert status < 500, sent
        if sent.signing != "signed" and not sent.body.startswith(CERTIFICATE_CHECK):
            assert status == 401, sent  # Slack's certificate check is answered unsigned

    await asyncio.to_thread(post)
    await bot.services.background.idle()

    assert len(statuses) >= 500 and {401, 400, 200} <= set(statuses)
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []
    assert await bot.services.storage.client.raw.hgetall(key) == before


async def test_a_body_not_in_its_content_encoding_is_a_400_without_a_traceback(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bot: Harness = await make_bot()
    caplog.set_level(logging.WARNING)
    headers = {"Content-Type": FORM, "Content-Encoding": "gzip"}
    async with bot.http.post(bot.url + EVENTS_PATH, data=b"payload=%7B%7D", headers=headers) as r:
        said = await r.text()
        assert (r.status, said) == (400, "the body is not in its content encoding")
        assert r.headers["Connection"] == "close"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
