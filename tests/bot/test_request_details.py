"""A job's details as approvers see them: escaped on the card, and when too long for it,
whole in the card's "Full details" modal (over real HTTP, through the Bolt app)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from aiohttp.test_utils import TestServer
from blockkit import check_message
from harness import ALICE, BOB, CHANNEL, Harness

from bot.api.request_records import REQUESTS_PATH
from bot.process.web import operator_app
from bot.ui import ids

LINE = "vol-7 <!channel> & <b>\n"


async def test_long_details_are_cut_on_the_card_and_shown_whole_in_full_details(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    _, token = await bot.services.storage.api_clients.create(
        "nightly-cleanup", channels=(CHANNEL,), now=datetime.now(UTC)
    )
    api = TestServer(operator_app(bot.services), host="127.0.0.1", port=0)
    await api.start_server()
    details = LINE * 1500  # 34,500 characters: far more than a card's section holds
    body = {"title": "Delete stale volumes", "channel": CHANNEL, "approvers": [ALICE, BOB]}
    headers = {"Authorization": f"Bearer {token}"}
    try:
        url = f"http://127.0.0.1:{api.port}{REQUESTS_PATH}"
        async with bot.http.post(url, json=body | {"details": details}, headers=headers) as r:
            assert r.status == 201, await r.text()
    finally:
        await api.close()
    card = bot.posted()
    check_message(card["text"], card["blocks"])
    shown = json.dumps(card["blocks"])
    assert "<!channel>" not in shown and "&lt;!channel&gt;" in shown
    assert shown.count("vol-7") < 1500  # cut
    buttons = {
        e["action_id"]: e for b in card["blocks"] if b["type"] == "actions" for e in b["elements"]
    }
    full = buttons[ids.FULL_ARGS]
    assert full["text"]["text"] == "Full details"

    await bot.click(ids.FULL_ARGS, full["value"], user=BOB)
    await bot.slack.wait_calls("views.open")
    modal = bot.slack.called("views.open")[-1]["view"]
    assert modal["title"]["text"] == "Full details"
    text = "".join(b["text"]["text"] for b in modal["blocks"] if "text" in b)
    assert text.count("vol-7 &lt;!channel&gt; &amp; &lt;b&gt;") == 1500  # whole, escaped
    assert "<!channel>" not in text
