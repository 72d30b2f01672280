"""``/signoff away until <date> to @someone``: while an approver is away, requests posted
ask their delegate, who may decide; the card says for whom; both commands are audited."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness import ALICE, BOB, CAROL, CHANNEL, MALLORY, Harness

from bot.agents.policy import Policy
from bot.ui import ids


async def test_a_delegate_decides_while_the_approver_is_away_and_not_after(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,)))
    back_on = (bot.clock.now() + timedelta(days=10)).date().isoformat()
    answer = await bot.command(f"away until {back_on} to <@{BOB}|bob>", user=ALICE)
    assert f"ask <@{BOB}> in your place" in answer["text"], answer
    audit = await bot.services.storage.audit.read(count=20)
    [away] = [e for e in audit if e.event == "away"]
    assert away.user_id == ALICE and away.detail.endswith(f"delegate {BOB}")

    value = await bot.start(requested_by=CAROL)
    card = str(bot.posted(0)["blocks"])
    assert f"<@{BOB}> for <@{ALICE}>, who is away" in card
    await bot.click(ids.APPROVE, value, user=BOB)
    assert (await bot.finished()).startswith("Finished: done: deleted 2 file(s)")
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]

    answer = await bot.command("back", user=ALICE)
    assert answer["text"].startswith("Welcome back")
    posted = len(bot.slack.called("chat.postMessage"))
    value = await bot.start(requested_by=CAROL)
    assert "who is away" not in str(bot.posted(-1)["blocks"])
    await bot.click(ids.APPROVE, value, user=BOB, message_ts=bot.message_ts(posted))
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not among the approvers" in bot.slack.called("chat.postEphemeral")[-1]["text"]


async def test_away_commands_that_cannot_be_noted_say_why_and_note_nothing(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    soon = (bot.clock.now() + timedelta(days=3)).date().isoformat()
    answers = {
        "away until tomorrow": "is not a date like 2026-12-24",
        "away until 2020-01-01": "That date has passed",
        "away until 2099-01-01": "at most a year",
        f"away until {soon} to @bob": "Name who decides for you as a mention",
        f"away until {soon} to <@{MALLORY}|me>": "must be someone else",
        "away": "Use `/signoff away until",
        "back": "You were not marked away",
    }
    for text, says in answers.items():
        answer = await bot.command(text, user=MALLORY)
        assert says in answer["text"], (text, answer)
    assert await bot.services.storage.away.of([MALLORY], bot.clock.now()) == {}
