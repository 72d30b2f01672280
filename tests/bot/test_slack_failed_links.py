"""Links to cards while Slack's ``auth.test`` fails: asked of ``chat.getPermalink`` instead,
``auth.test`` asked again once a minute, not per card; a reply's link names its thread."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from fakes import BAD_GATEWAY
from harness import CAROL, CHANNEL, Harness

from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.ui.posting import message_link


async def test_while_auth_test_fails_a_card_s_link_is_asked_of_slack(make_bot: Any) -> None:
    """The workspace's URL is unknown (auth.test failed): the link comes from
    chat.getPermalink; once auth.test answers, it is built from the URL."""
    bot: Harness = await make_bot()
    bot.slack.faults["auth.test"].append(BAD_GATEWAY)
    await bot.start(requested_by=CAROL)
    [asked] = bot.slack.called("chat.getPermalink")
    assert asked == {"channel": CHANNEL, "message_ts": bot.message_ts()}
    bot.clock.advance(timedelta(minutes=1))  # auth.test is asked again
    await bot.start(requested_by=CAROL)
    assert len(bot.slack.called("chat.getPermalink")) == 1
    records = (await bot.services.storage.queries.pending_for_channel(CHANNEL)).records
    links = sorted(str(r.permalink) for r in records)
    assert links == [
        f"https://fake.slack.test/archives/{CHANNEL}/p{bot.message_ts(n).replace('.', '')}"
        for n in (0, 1)
    ]


def test_a_reply_s_link_names_its_thread_as_slack_s_does() -> None:
    link = message_link("https://acme.slack.com/", "C0OPS", "1700.000200", thread_ts="1700.000100")
    assert (
        link == "https://acme.slack.com/archives/C0OPS/p1700000200?thread_ts=1700.000100&cid=C0OPS"
    )
    top = message_link("https://acme.slack.com/", "C0OPS", "1700.000100", thread_ts="1700.000100")
    assert top == "https://acme.slack.com/archives/C0OPS/p1700000100"


async def test_while_auth_test_fails_it_is_asked_once_a_minute_not_per_card(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    bot.slack.down = True  # three cards go to the outbox
    place = Place(channel=CHANNEL, thread_ts=None, requested_by=CAROL)
    for _ in range(3):
        await start_run(bot.services, "cleanup", "clean up", place=place)
    asked = [c for c in bot.slack.failed if c.method == "auth.test"]
    assert len(asked) == 1
    bot.clock.advance(timedelta(minutes=1))
    await start_run(bot.services, "cleanup", "clean up", place=place)
    assert len([c for c in bot.slack.failed if c.method == "auth.test"]) == 2
