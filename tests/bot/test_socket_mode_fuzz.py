"""Fuzzing Socket Mode: Hypothesis builds envelopes from every payload the bot handles
(interactions, commands, events), with fields replaced or removed, odd envelope ids and
types, and odd payloads, sent over a real local WebSocket to slack-sdk's
client. Whatever arrives: it is acked (or, when Bolt answers it with an error, logged and
left for Slack to send again), no traceback in the log, and the stored request is
unchanged."""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from collections import Counter
from typing import Any

import pytest
from fakes import command_body, event_body
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from socket_bot import SocketBot
from test_fuzz import JSON, MALLORY, _mutated, interaction_payloads

UNACKED = "Bolt answered envelope "


class _Unacked(logging.Handler):
    """How often the handler logged each envelope id as not acked (Bolt answered an error)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith(UNACKED):
            self.ids[record.getMessage().removeprefix(UNACKED).split(" ")[0]] += 1


def _payloads(value: str, ts: str) -> list[tuple[str, dict[str, Any]]]:
    """Each kind of envelope the bot acts on, with a payload it handles, as Mallory sends it."""
    command = dict(
        urllib.parse.parse_qsl(
            command_body(text="", user=MALLORY, channel="C0OPS"), keep_blank_values=True
        )
    )
    mention = {"type": "app_mention", "user": MALLORY, "text": "<@U0BOT> hi", "channel": "C0OPS"}
    event = json.loads(event_body(mention | {"ts": "1.2"}))
    return [
        *(("interactive", p) for p in interaction_payloads(value, ts)),
        ("slash_commands", command),
        ("events_api", event),
    ]


ENVELOPE_IDS = st.one_of(
    st.none(),  # a fresh one, as Slack gives
    st.sampled_from(["", " ", "env 1", "x" * 129, "\u0661", "env-1\n"]),
    st.text(max_size=12),
)
ODD_PAYLOADS = st.text(max_size=12) | st.dictionaries(st.text(max_size=6), JSON, max_size=3)
"""Payloads slack-sdk hands on (a string becomes ``{"text": ...}``); it refuses others itself."""
KINDS = st.sampled_from(["interactive", "slash_commands", "events_api", "hello", "", "?"])


async def test_no_envelope_goes_unanswered_or_logs_a_traceback_or_changes_a_stored_request(
    socket_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sb: SocketBot = await socket_bot()
    bot, slack = sb.bot, sb.bot.slack
    value = await bot.start()
    key = bot.services.storage.keys.record(bot.record_id(value))
    before = await bot.services.storage.client.raw.hgetall(key)
    unacked = _Unacked()
    logging.getLogger("bot.slack.socket_mode").addHandler(unacked)
    caplog.set_level(logging.WARNING)
    loop = asyncio.get_running_loop()
    payloads = st.sampled_from(_payloads(value, bot.message_ts()))
    mutated = payloads.flatmap(lambda kp: st.tuples(st.just(kp[0]), _mutated(kp[1])))
    answered: list[str] = []

    def seen(envelope_id: str) -> tuple[int, int]:
        acks = sum(a.get("envelope_id") == envelope_id for a in slack.socket_acks)
        return acks, unacked.ids[envelope_id]

    async def deliver(kind: str, payload: Any, envelope_id: str | None) -> None:
        """Send one envelope and wait for its answer: an ack, or Bolt's error logged."""
        before = seen(envelope_id) if envelope_id is not None else (0, 0)
        sent = await slack.deliver(payload, kind=kind, envelope_id=envelope_id)
        async with asyncio.timeout(10):
            while True:
                acks, errors = seen(sent)
                if acks > before[0] or errors > before[1]:
                    answered.append("acked" if acks > before[0] else "unacked")
                    return
                await asyncio.sleep(0.005)

    @settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
    @given(
        envelope=st.one_of(
            mutated,
            st.tuples(KINDS, st.one_of(ODD_PAYLOADS, mutated.map(lambda kp: kp[1]))),
        ),
        envelope_id=ENVELOPE_IDS,
    )
    def send(envelope: tuple[str, Any], envelope_id: str | None) -> None:
        kind, payload = envelope
        asyncio.run_coroutine_threadsafe(deliver(kind, payload, envelope_id), loop).result(30)

    try:
        await asyncio.to_thread(send)
        await bot.services.background.idle()
    finally:
        logging.getLogger("bot.slack.socket_mode").removeHandler(unacked)

    assert len(answered) >= 100 and "acked" in answered
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == []
    assert await bot.services.storage.client.raw.hgetall(key) == before
