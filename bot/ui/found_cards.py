"""Finding a card Slack took that Redis never recorded (its poster died while Redis was
down). Every card carries its record id in Slack's message metadata, so before the outbox
posts a card again it looks for that card in the channel (or the run's thread)."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.services import Services
from storage.records import InterruptRecord

from .slack_failures import passing, why_failed

log = logging.getLogger(__name__)

CARD_EVENT = "signoff_card"
"""The metadata event type of every card Signoff posts; its payload names the record."""

_PAGE = 200
_PAGES = 5
_SKEW = timedelta(minutes=1)
"""How much earlier than the record's creation a card may carry a ts (clocks differ)."""


def card_metadata(record_id: str, *, step: int | None = None) -> dict[str, Any]:
    """The ``metadata`` a card of ``record_id`` (or of its escalation ``step``) is posted
    with."""
    payload: dict[str, Any] = {"record_id": record_id}
    if step is not None:
        payload["step"] = step
    return {"event_type": CARD_EVENT, "event_payload": payload}


async def unrecorded_card(
    services: Services,
    record: InterruptRecord,
    *,
    channel: str,
    thread_ts: str | None,
    step: int | None = None,
) -> str | None:
    """The ts of ``record``'s card (or its escalation ``step``'s) in ``channel`` or the
    thread ``thread_ts``, posted since the record was made; None when Slack has none, or
    will not be asked (no history scope: then a card is posted again, as before). A
    passing failure is raised: the outbox tries later."""
    wanted = card_metadata(record.id, step=step)
    wanted_pair = (wanted["event_type"], wanted["event_payload"])
    oldest = f"{(record.created_at - _SKEW).timestamp():.6f}"
    cursor: str | None = None
    try:
        for _ in range(_PAGES):
            if thread_ts:
                answer = await services.client.conversations_replies(
                    channel=channel,
                    ts=thread_ts,
                    oldest=oldest,
                    limit=_PAGE,
                    cursor=cursor,
                    include_all_metadata=True,
                )
            else:
                answer = await services.client.conversations_history(
                    channel=channel,
                    oldest=oldest,
                    limit=_PAGE,
                    cursor=cursor,
                    include_all_metadata=True,
                )
            for message in answer.get("messages") or []:
                meta = message.get("metadata") or {}
                if (meta.get("event_type"), meta.get("event_payload")) == wanted_pair:
                    log.warning(
                        "interrupt %s: its card %s was posted but not recorded; recorded now",
                        record.id,
                        message.get("ts"),
                    )
                    return str(message["ts"])
            cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
            if cursor is None:
                return None
    except SlackApiError as exc:
        if passing(exc):
            raise
        log.warning(
            "interrupt %s: not looked for an earlier card of it (%s), so it is posted again; "
            "the app needs the channels:history, groups:history, im:history and mpim:history "
            "scopes to find one",
            record.id,
            why_failed(exc),
        )
    return None
