"""``member_joined_channel``: when the app itself is added to a channel (``/invite
@Signoff``), the cards waiting in the outbox because that channel refused the app are
posted at once, not at the outbox's next try."""

from __future__ import annotations

import logging
from typing import Any

from bot.services import Services
from bot.ui.outbox import post_waiting_in
from storage.errors import StorageError

log = logging.getLogger(__name__)


def joined_listener(services: Services) -> Any:
    """The Bolt listener: acked by Bolt on return, the posting done in the background."""

    async def on_joined(body: dict[str, Any]) -> None:
        event = body.get("event") or {}
        user, channel = str(event.get("user") or ""), str(event.get("channel") or "")
        if user and channel:
            services.background.spawn(
                _post_if_app(services, user, channel), name=f"joined {channel}"
            )

    return on_joined


async def _post_if_app(services: Services, user: str, channel: str) -> None:
    """Post the cards waiting for ``channel`` when ``user`` is the app's own bot user; a
    retried delivery finds them posted (or leased) and posts nothing again."""
    if user != await services.directory.own_user_id():
        return
    try:
        await post_waiting_in(services, channel)
    except StorageError as exc:  # the scheduler's outbox posts them once Redis answers
        log.error("cards waiting for %s not posted on the invite: %s", channel, exc)
