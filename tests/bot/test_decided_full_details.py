"""A decided card that cuts something to fit Slack (why it was asked, the denial's
reason) offers Full details, which shows it whole, over real HTTP; a long reason is cut
to the room its label leaves."""

from __future__ import annotations

from typing import Any

from harness import ALICE, CAROL, CHANNEL, Harness, card_now
from test_card_full_details import _buttons, _full_details, asking_why

from bot.agents.policy import Policy
from bot.ui import ids
from bot.ui.blocks import SECTION_TEXT
from bot.ui.mrkdwn import escape_truncate

REASON = "No: " + "a<b " * 748 + "END."  # 3,000 characters, 3,748 escaped
LABEL = "*Reason:* "


async def _decided(bot: Harness, headline: str) -> dict[str, Any]:
    """The card once it reads as decided (``headline``)."""

    def drawn() -> bool:
        header = card_now(bot)["blocks"][0]
        return str(header["text"]["text"]).startswith(headline)

    await bot.slack.wait_for(drawn, what=f"the card drawn as {headline!r}")
    return card_now(bot)


async def test_a_long_denial_reason_is_cut_to_its_room_and_whole_in_full_details(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    value = await bot.start(requested_by=CAROL)
    assert len(REASON) == 3000
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text=REASON)
    assert status == 200 and "errors" not in body, body

    card = await _decided(bot, "Denied")
    [reason] = [
        b["text"]["text"]
        for b in card["blocks"]
        if b["type"] == "section" and b["text"]["text"].startswith(LABEL)
    ]
    assert reason == LABEL + escape_truncate(REASON, SECTION_TEXT - len(LABEL))
    assert reason.endswith("…") and "END" not in reason
    assert "END" in await _full_details(bot, card)


async def test_why_a_call_was_asked_cut_on_its_decided_card_is_in_full_details(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(spec=asking_why())
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.APPROVE, value, user=ALICE)

    card = await _decided(bot, "Approved")
    assert "reason-0599" not in str(card["blocks"])
    assert set(_buttons(card)) == {ids.FULL_ARGS}  # the decision's buttons are gone
    assert "reason-0599" in await _full_details(bot, card)
