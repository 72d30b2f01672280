"""Over Socket Mode an envelope is acted on once, however often it arrives and whichever
process's connection it arrives on: one received before is acked and does nothing. Each
envelope goes over a real local WebSocket to slack-sdk's client, the check to Redis."""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from fakes import FakeSlack, click_payload, command_body, submit_payload
from harness import ALICE, CAROL, CHANNEL
from socket_bot import SocketBot

from bot.ui import ids

STARTING = "Starting cleanup…"


def _run_command(text: str) -> dict[str, Any]:
    """The payload of ``/signoff <text>`` as Carol sends it, with a trigger id of its own."""
    body = command_body(text=text, user=CAROL, channel=CHANNEL)
    return dict(urllib.parse.parse_qsl(body, keep_blank_values=True))


def _replies(slack: FakeSlack, envelope_id: str) -> list[str | None]:
    """What each ack of ``envelope_id`` answered (None for a bare ack), in order."""
    acks = [a for a in slack.socket_acks if a.get("envelope_id") == envelope_id]
    return [(a.get("payload") or {}).get("text") for a in acks]


async def test_an_envelope_slack_sends_again_is_acked_and_starts_no_second_run(
    socket_bot: Any,
) -> None:
    """``/signoff run`` received twice in one envelope starts one run, and both are acked;
    the same command in another envelope starts another. The envelope id is kept ten
    minutes, as a signature is in HTTP mode."""
    sb: SocketBot = await socket_bot()
    slack, storage = sb.bot.slack, sb.bot.services.storage
    payload = _run_command("run cleanup tidy")
    sent = await slack.deliver(payload, kind="slash_commands")
    await slack.acked(sent)
    await slack.deliver(payload, kind="slash_commands", envelope_id=sent)
    await slack.wait_for(lambda: len(_replies(slack, sent)) == 2, what="the second ack")
    assert _replies(slack, sent) == [STARTING, None]
    await slack.wait_calls("chat.postMessage")
    await sb.bot.services.background.idle()
    assert len(slack.called("chat.postMessage")) == 1
    kept_ms = await storage.client.raw.pttl(storage.keys.envelope(sent))
    assert 9 * 60_000 < kept_ms <= 10 * 60_000

    other = await slack.deliver(_run_command("run cleanup tidy"), kind="slash_commands")
    assert (await slack.acked(other))["payload"] == {"text": STARTING}
    await slack.wait_calls("chat.postMessage", 2)
    await sb.bot.services.background.idle()
    assert len(slack.called("chat.postMessage")) == 2


async def test_a_withdrawal_slack_sends_again_withdraws_once_and_says_nothing_more(
    socket_bot: Any,
) -> None:
    """Carol's Withdraw received twice in one envelope: her request is withdrawn, both are
    acked, and she is not told it was already withdrawn (by her own click)."""
    sb: SocketBot = await socket_bot()
    slack = sb.bot.slack
    value = await sb.bot.start(requested_by=CAROL)
    record_id = sb.bot.record_id(value)
    payload = click_payload(
        action_id=ids.MORE, value="", user=CAROL, channel=CHANNEL, message_ts=sb.bot.message_ts()
    )
    action = payload["actions"][0]
    action.pop("value")
    action |= {"type": "overflow", "selected_option": {"value": f"{ids.WITHDRAW} {record_id}"}}
    sent = await slack.deliver(payload)
    await slack.acked(sent)
    await slack.deliver(payload, envelope_id=sent)
    await slack.wait_for(lambda: len(_replies(slack, sent)) == 2, what="the second ack")
    await sb.bot.services.background.idle()
    record = await sb.bot.services.storage.queries.get(record_id)
    assert record is not None and record.state == "cancelled"
    assert slack.called("chat.postEphemeral") == []


async def test_one_envelope_on_two_processes_connections_starts_one_run(
    socket_bot: Any,
) -> None:
    """Two ``signoff socket`` processes each given the same envelope at once: one acts,
    both ack."""
    one: SocketBot = await socket_bot()
    two: SocketBot = await socket_bot()
    slack = one.bot.slack
    await slack.wait_for(lambda: len(slack.sockets) == 2, what="both connections")
    payload = _run_command("run cleanup tidy")
    await asyncio.gather(
        *(
            slack.deliver(payload, kind="slash_commands", envelope_id="env-both", socket=n)
            for n in (0, 1)
        )
    )
    await slack.wait_for(lambda: len(_replies(slack, "env-both")) == 2, what="both acks")
    assert sorted(_replies(slack, "env-both"), key=str) == [None, STARTING]
    await slack.wait_calls("chat.postMessage")
    await one.bot.services.background.idle()
    await two.bot.services.background.idle()
    assert len(slack.called("chat.postMessage")) == 1


async def test_a_decision_click_is_queued_without_the_envelope_check(socket_bot: Any) -> None:
    """As over HTTP, a decision click's ack waits on one round trip, its append to the
    click stream: the deciders decide each trigger id once, so nothing else is asked."""
    sb: SocketBot = await socket_bot(workers=0, deciders=0)
    value = await sb.bot.start()
    await sb.click(ids.APPROVE, value, user=ALICE)
    storage = sb.bot.services.storage
    assert await storage.clicks.lag() == 1
    envelopes = storage.client.raw.scan_iter(f"{storage.keys.prefix}:envelope:*")
    assert [key async for key in envelopes] == []


async def test_an_event_is_guarded_by_its_event_id_not_its_envelope(socket_bot: Any) -> None:
    """Slack sends an event again when it saw no ack for the first; the mention listener
    skips a repeat by its ``event_id``, so an event's envelope is not remembered: one whose
    first delivery failed is still acted on when it comes again."""
    sb: SocketBot = await socket_bot()
    mention = {
        "type": "app_mention",
        "user": CAROL,
        "text": "<@UBOT0001> run cleanup tidy",
        "ts": "1700000000.000300",
        "channel": CHANNEL,
    }
    await sb.event(mention, event_id="Ev0ENVELOPE")
    await sb.bot.services.background.idle()
    await sb.bot.slack.wait_calls("chat.postMessage")
    storage = sb.bot.services.storage
    envelopes = storage.client.raw.scan_iter(f"{storage.keys.prefix}:envelope:*")
    assert [key async for key in envelopes] == []


async def test_a_malformed_envelope_is_acked_and_not_acted_on(
    socket_bot: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A payload HTTP mode would refuse with a 400 (here a command whose user id is not
    one) is acked, so Slack does not send it again, logged, and not acted on."""
    sb: SocketBot = await socket_bot()
    slack = sb.bot.slack
    malformed = _run_command("run cleanup tidy") | {"user_id": "not a user"}
    with caplog.at_level(logging.WARNING, logger="bot.slack.socket_mode"):
        sent = await slack.deliver(malformed, kind="slash_commands")
        assert (await slack.acked(sent)).get("payload") is None
        clicked = await slack.deliver({"type": "block_actions", "actions": []})
        await slack.acked(clicked)
    assert [r.getMessage() for r in caplog.records] == [
        f"envelope {sent!r} is malformed: acked, not acted on",
        f"envelope {clicked!r} is malformed: acked, not acted on",
    ]
    well_formed = await slack.deliver(_run_command("run cleanup tidy"), kind="slash_commands")
    assert (await slack.acked(well_formed))["payload"] == {"text": STARTING}
    await slack.wait_calls("chat.postMessage")
    await sb.bot.services.background.idle()
    assert len(slack.called("chat.postMessage")) == 1


@pytest.mark.parametrize("envelope_id", ["", "a b", "e" * 200])
async def test_an_envelope_whose_id_is_malformed_is_acked_not_acted_on_and_not_blamed_on_redis(
    socket_bot: Any, caplog: pytest.LogCaptureFixture, envelope_id: str
) -> None:
    """Slack's envelope ids are always well formed: one that is not (empty, with a space,
    too long to keep) is acked and not acted on, as a malformed payload is, and the log says
    so instead of warning that Redis could not check it for a replay."""
    sb: SocketBot = await socket_bot()
    slack = sb.bot.slack
    with caplog.at_level(logging.WARNING):
        await slack.deliver(
            _run_command("run cleanup tidy"), kind="slash_commands", envelope_id=envelope_id
        )
        assert (await slack.acked(envelope_id)).get("payload") is None
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"envelope {envelope_id[:40]!r} is malformed: acked, not acted on"], said
    well_formed = await slack.deliver(_run_command("run cleanup tidy"), kind="slash_commands")
    assert (await slack.acked(well_formed))["payload"] == {"text": STARTING}
    await slack.wait_calls("chat.postMessage")
    await sb.bot.services.background.idle()
    assert len(slack.called("chat.postMessage")) == 1


class _Held:
    """An async callable that holds each call until ``release`` is set; ``calls`` lists the
    arguments of each, ``reached`` is set by the first."""

    def __init__(self, call: Callable[..., Awaitable[Any]]) -> None:
        self.call, self.calls = call, list[tuple[Any, ...]]()
        self.reached, self.release = asyncio.Event(), asyncio.Event()

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(args)
        self.reached.set()
        await self.release.wait()
        return await self.call(*args, **kwargs)


async def _sent_again_while_in_hand(
    sb: SocketBot, payload: dict[str, Any], *, kind: str, held: _Held
) -> list[dict[str, Any]]:
    """Deliver ``payload`` in an envelope, and again once its first copy reaches ``held``;
    release the first once the copy is in the handler too. Both acks, in order."""
    slack = sb.bot.slack
    listeners = sb.handler.client.socket_mode_request_listeners
    [handle], copy_in = listeners, asyncio.Event()

    async def handle_copy(client: Any, req: Any) -> None:
        if held.reached.is_set():
            copy_in.set()
        await handle(client, req)

    listeners[:] = [handle_copy]
    sent = await slack.deliver(payload, kind=kind)
    await asyncio.wait_for(held.reached.wait(), 5)
    await slack.deliver(payload, kind=kind, envelope_id=sent)
    await asyncio.wait_for(copy_in.wait(), 5)
    held.release.set()

    def acks() -> list[dict[str, Any]]:
        return [a for a in slack.socket_acks if a.get("envelope_id") == sent]

    await slack.wait_for(lambda: len(acks()) == 2, what="both acks")
    return acks()


async def test_an_envelope_sent_again_while_in_hand_is_acked_with_the_first_reply(
    socket_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/signoff`` arrives again while its pending list is still read: the copy's ack
    carries the same list (Slack shows the first ack it gets), and the list is read once."""
    sb: SocketBot = await socket_bot()
    queries = sb.bot.services.storage.queries
    held = _Held(queries.pending_for_user)
    monkeypatch.setattr(queries, "pending_for_user", held)
    acks = await _sent_again_while_in_hand(sb, _run_command(""), kind="slash_commands", held=held)
    first, again = (ack.get("payload") for ack in acks)
    assert again == first
    assert first is not None and "waiting" in first["text"].lower()
    assert len(held.calls) == 1


async def test_a_form_sent_again_while_in_hand_is_acked_with_the_first_errors(
    socket_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Reply form left blank arrives again while its request is still read: the copy's
    ack carries the same errors, shown in the form, and the form is judged once."""
    sb: SocketBot = await socket_bot()
    value = await sb.bot.start()
    queries = sb.bot.services.storage.queries
    held = _Held(queries.get)
    monkeypatch.setattr(queries, "get", held)
    blank = submit_payload(callback_id=ids.REPLY_VIEW, metadata=value, user=ALICE, text=" ")
    acks = await _sent_again_while_in_hand(sb, blank, kind="interactive", held=held)
    errors = {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: "Write the reply the agent should receive."},
    }
    assert [ack.get("payload") for ack in acks] == [errors, errors]
    assert held.calls == [(sb.bot.record_id(value),)]


@pytest.mark.parametrize("channel", [1.5, True, "C0OPS"])
async def test_a_decision_click_bolt_could_not_read_is_acked_as_malformed(
    socket_bot: Any, caplog: pytest.LogCaptureFixture, channel: Any
) -> None:
    """A click on Signoff's button whose ``channel`` is not the object Slack sends (Bolt
    reads it to build its context, and would raise) is acked, logged as malformed and not
    acted on; nothing is logged with a traceback."""
    sb: SocketBot = await socket_bot(workers=0, deciders=0)
    value = await sb.bot.start()
    payload = click_payload(
        action_id=ids.APPROVE, value=value, user=ALICE, channel=CHANNEL, message_ts="1.1"
    )
    payload["channel"] = channel
    with caplog.at_level(logging.WARNING):
        sent = await sb.bot.slack.deliver(payload)
        assert (await sb.bot.slack.acked(sent)).get("payload") is None
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"envelope {sent!r} is malformed: acked, not acted on"], said
    assert not [r for r in caplog.records if r.exc_info]
    assert await sb.bot.services.storage.clicks.lag() == 0


@pytest.mark.parametrize("field", ["enterprise", "team", "authorizations"])
async def test_a_command_bolt_could_not_read_is_acked_as_malformed(
    socket_bot: Any, caplog: pytest.LogCaptureFixture, field: str
) -> None:
    """A command's payload comes as JSON over Socket Mode, so its fields can be any type:
    one Bolt reads to build its context that is not what Slack sends (a number) is acked,
    logged as malformed and not acted on, with no traceback."""
    sb: SocketBot = await socket_bot()
    with caplog.at_level(logging.WARNING):
        sent = await sb.bot.slack.deliver(
            _run_command("run cleanup tidy") | {field: 1.5}, kind="slash_commands"
        )
        assert (await sb.bot.slack.acked(sent)).get("payload") is None
    said = [r.getMessage() for r in caplog.records]
    assert said == [f"envelope {sent!r} is malformed: acked, not acted on"], said
    assert sb.bot.slack.called("chat.postMessage") == []
