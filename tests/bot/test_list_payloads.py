"""Malformed list and Home clicks: signed, shaped enough to reach their listener, but
missing what it needs. Each is answered without a server error and changes nothing."""

from __future__ import annotations

from typing import Any

from fakes import click_payload
from harness import ALICE, CAROL, CHANNEL, Harness

from bot.ui import ids


async def test_a_next_page_click_without_a_response_url_is_ignored_not_a_server_error(
    make_bot: Any,
) -> None:
    """A message's Next page answers through the click's ``response_url``, which Slack
    always sends: one without it is logged and left, not a 500 from a raised error."""
    bot: Harness = await make_bot()
    await bot.start(requested_by=CAROL)
    payload = click_payload(
        action_id=ids.NEXT_PAGE,
        value="1700000000000\0run_x/int_y".replace("\0", " "),
        user=ALICE,
        channel=CHANNEL,
        message_ts="1700000000.000100",
    )
    payload.pop("response_url", None)
    response = await bot.send(payload)
    assert response.status == 200
    await bot.services.background.idle()
    assert bot.slack.called("response_url") == [] and bot.slack.called("views.publish") == []
