"""Requests that are not Slack's are refused before anything is stored (issue 4, test 7)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import urllib.parse
from datetime import timedelta
from typing import Any

import pytest
from fakes import SIGNING_SECRET, click_payload, command_body, form_body, sign
from harness import ALICE, CAROL, CHANNEL, Harness
from hypothesis import given
from hypothesis import strategies as st

from bot.agents.policy import Policy
from bot.slack import rare_warnings
from bot.slack.events import EVENTS_PATH
from bot.slack.requests import parse_request
from bot.ui import ids

WINDOW = timedelta(seconds=60)


async def _post(bot: Harness, body: str, headers: dict[str, str]) -> int:
    async with bot.http.post(bot.url + EVENTS_PATH, data=body.encode(), headers=headers) as r:
        await r.read()
        return r.status


async def test_bad_signature_stale_timestamp_and_malformed_payload_are_refused(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    key = bot.services.storage.keys.record(bot.record_id(value))
    before = await bot.services.storage.client.raw.hgetall(key)
    calls_before = len(bot.slack.calls)
    click = form_body(
        click_payload(
            action_id=ids.APPROVE,
            value=value,
            user=ALICE,
            channel="C0OPS",
            message_ts=bot.message_ts(),
        )
    )

    assert await _post(bot, click, sign(click, secret="not-the-secret")) == 401
    assert await _post(bot, click, sign(click, timestamp=int(time.time()) - 301)) == 401
    tampered = sign(click)
    assert await _post(bot, click.replace("U0ALICE", "U0BOB"), tampered) == 401
    for body in ("payload=%7Bnot-json", "payload=%5B1%5D", "payload=%7B%7D", "&&=&"):
        assert await _post(bot, body, sign(body)) == 400, body

    assert await bot.services.storage.client.raw.hgetall(key) == before
    assert len(bot.slack.calls) == calls_before
    assert bot.services.background.pending == 0


async def test_health_readiness_and_metrics_answer(make_bot: Any) -> None:
    bot: Harness = await make_bot(workers=0, deciders=0)
    value = await bot.start()
    await bot.start()
    assert "signoff_pending_interrupts 2" in await _metrics(bot)

    await bot.click(ids.APPROVE, value, user=ALICE, message_ts=bot.message_ts(0))
    assert "signoff_click_backlog 1" in await _metrics(bot)  # acked, not yet decided
    await bot.loops.stop()
    decider: Harness = await make_bot(workers=0)
    await bot.slack.wait_calls("chat.update")
    await decider.loops.stop()  # lets it acknowledge the click, after the card's redraw
    text = await _metrics(bot)
    assert "signoff_pending_interrupts 1" in text
    assert "signoff_click_backlog 0" in text
    assert "signoff_resume_queue_lag 1" in text  # decided, no worker has read it yet
    assert 'signoff_decisions_total{outcome="approved"} 1' in await _metrics(decider)

    worker: Harness = await make_bot(workers=1)
    await worker.finished()
    await worker.loops.stop()
    async with bot.http.get(bot.url + "/healthz") as r:
        assert r.status == 200
    async with bot.http.get(bot.url + "/readyz") as r:
        assert r.status == 200
    text = await _metrics(bot)
    assert "signoff_resume_queue_lag 0" in text
    assert "signoff_ack_seconds_count 1" in text
    assert 'signoff_ack_seconds_bucket{le="+Inf"} 1' in text
    worker_text = await _metrics(worker)
    assert "signoff_click_to_resume_seconds_count 1" in worker_text
    for series in (
        "signoff_pending_interrupts gauge",
        "signoff_resume_queue_lag gauge",
        "signoff_click_backlog gauge",
        "signoff_decisions_total counter",
        "signoff_ack_seconds histogram",
        "signoff_click_to_resume_seconds histogram",
    ):
        assert f"# TYPE {series}" in text


async def _metrics(bot: Harness) -> str:
    async with bot.http.get(bot.url + "/metrics") as r:
        assert r.status == 200 and r.content_type == "text/plain"
        return await r.text()


_VALUES = st.one_of(
    st.text(), st.dictionaries(st.sampled_from(["type", "user"]), st.text()).map(json.dumps)
)
_FORMS = st.lists(
    st.tuples(st.sampled_from(["payload", "command", "text", "x"]), _VALUES), max_size=4
).map(lambda fields: "&".join(f"{k}={urllib.parse.quote_plus(v)}" for k, v in fields))


@given(st.one_of(st.text(), _FORMS))
def test_any_form_body_is_read_as_urllib_reads_it_or_refused(body: str) -> None:
    request = parse_request(body, "application/x-www-form-urlencoded")
    form = urllib.parse.parse_qs(body, keep_blank_values=True)
    if "payload" not in form and "command" not in form:
        assert request is None
    elif "payload" in form:
        try:
            payload = json.loads(form["payload"][0])
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
            assert request is None


async def test_slacks_certificate_check_is_answered_and_does_nothing(make_bot: Any) -> None:
    """Slack checks a slash command's HTTPS certificate with an ``ssl_check=1`` POST."""
    bot: Harness = await make_bot()
    calls_before = len(bot.slack.calls)
    check = "ssl_check=1&token=legacy-verification-token"
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    assert await _post(bot, check, form) == 200
    assert await _post(bot, check, sign(check)) == 200

    assert len(bot.slack.calls) == calls_before
    assert bot.services.background.pending == 0


async def test_badly_signed_requests_are_logged_once_a_minute_never_quoting_the_secret(
    make_bot: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    bot: Harness = await make_bot(workers=0, deciders=0)
    caplog.set_level(logging.WARNING, logger="bot.slack.events")
    body = "command=%2Fsignoff&text=help"
    headers = sign(body, secret="the-old-secret")
    for _ in range(3):
        assert await _post(bot, body, headers) == 401

    def warnings() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "bot.slack.events"]

    [first] = warnings()
    assert "(1 since startup)" in first and "check SLACK_SIGNING_SECRET" in first
    monkeypatch.setattr(rare_warnings, "WARN_EVERY", 0.0)  # the minute has passed
    assert await _post(bot, body, headers) == 401
    assert warnings()[1:] == [first.replace("1 since startup", "3 since the last warning")]
    logged = caplog.text
    assert SIGNING_SECRET not in logged and "the-old-secret" not in logged
    signature = next(v for k, v in headers.items() if k.lower() == "x-slack-signature")
    assert signature.removeprefix("v0=") not in logged


async def test_a_signed_click_sent_again_decides_nothing_so_an_undone_approval_stays_undone(
    make_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Someone who captured Alice's Approve (the hop after TLS ends, say) sends it again,
    byte for byte, within the five minutes its signature is good for, after she undid it.
    The click is taken (its ack waits on nothing more) and decides nothing: its trigger id
    was decided before. A command received again is refused."""
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,), undo_window=WINDOW))
    caplog.set_level(logging.INFO)
    value = await bot.start(requested_by=CAROL)
    approve = form_body(
        click_payload(
            action_id=ids.APPROVE,
            value=value,
            user=ALICE,
            channel=CHANNEL,
            message_ts=bot.message_ts(),
        )
    )
    headers = sign(approve)
    assert await _post(bot, approve, headers) == 200
    await bot.slack.wait_for(lambda: _headline(bot).startswith("Approved, not yet final"))
    await bot.click(ids.UNDO, value, user=ALICE)
    await bot.slack.wait_for(lambda: _headline(bot) == "Approval needed: delete_files")

    decided_before = _logged("storage.decisions", "was decided before")
    assert await _post(bot, approve, headers) == 200
    await asyncio.wait_for(decided_before.wait(), 5)  # the deciders took the replay
    stored = await bot.services.storage.queries.get(bot.record_id(value))
    assert stored is not None and stored.state == "pending" and stored.held is None
    assert _headline(bot) == "Approval needed: delete_files"
    command = command_body(text="", user=ALICE, channel=CHANNEL)
    command_headers = sign(command)
    assert await _post(bot, command, command_headers) == 200
    assert await _post(bot, command, command_headers) == 401
    await bot.click(ids.APPROVE, value, user=ALICE)  # Alice's own new click still counts
    await bot.slack.wait_for(lambda: _headline(bot).startswith("Approved, not yet final"))
    [warning] = [r.getMessage() for r in caplog.records if r.name == "bot.slack.events"]
    assert "received before" in warning and command_headers["X-Slack-Signature"] not in warning


def _logged(logger: str, text: str) -> asyncio.Event:
    """An event set once ``logger`` logs a line holding ``text``."""
    seen = asyncio.Event()

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if text in record.getMessage():
                seen.set()
                logging.getLogger(logger).removeHandler(self)

    logging.getLogger(logger).addHandler(_Watch())
    return seen


def _headline(bot: Harness) -> str:
    updates = bot.slack.called("chat.update")
    return str((updates[-1] if updates else bot.posted(0))["blocks"][0]["text"]["text"])


async def test_a_signed_interaction_sent_again_is_refused_and_its_signature_kept_ten_minutes(
    make_bot: Any,
) -> None:
    """A Deny (its form opens once) received again, byte for byte, is a 401: only an
    Approve or a question's answer is taken twice, as storage decides those once."""
    bot: Harness = await make_bot()
    value = await bot.start(requested_by=CAROL)
    deny = form_body(
        click_payload(
            action_id=ids.DENY,
            value=value,
            user=ALICE,
            channel=CHANNEL,
            message_ts=bot.message_ts(),
        )
    )
    headers = sign(deny)
    assert await _post(bot, deny, headers) == 200
    await bot.slack.wait_calls("views.open")
    assert await _post(bot, deny, headers) == 401
    storage = bot.services.storage
    digest = hashlib.sha256(headers["X-Slack-Signature"].encode()).hexdigest()
    kept_ms = await storage.client.raw.pttl(storage.keys.signed_request(digest))
    assert 9 * 60_000 < kept_ms <= 10 * 60_000
    assert len(bot.slack.called("views.open")) == 1
