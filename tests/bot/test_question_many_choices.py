"""A question with more answers than a Slack select lists (100) offers every one of them, in
option groups of 100, and any one can be picked from the card."""

from __future__ import annotations

from typing import Any

from blockkit import check_message
from harness import ALICE, CHANNEL, Harness
from test_questions import question_spec

from bot.agents.policy import Policy
from bot.ui import ids
from sandbox.blocks import MAX_BLOCK_TEXT, checked_blocks, options_of

REGIONS = [f"region-{n:03d}" for n in range(250)]


async def test_any_of_250_answers_can_be_picked_from_the_card(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(REGIONS, policy))
    bot.slack.most_block_text = MAX_BLOCK_TEXT  # the card fits Slack's total as well
    value = await bot.start()
    posted = bot.posted()
    check_message(posted["text"], posted["blocks"])
    choices = checked_blocks(posted["blocks"], surface="message")[-2]
    [select] = choices["elements"]
    assert select["type"] == "static_select" and "options" not in select
    assert [len(g["options"]) for g in select["option_groups"]] == [100, 100, 50]
    listed = options_of(select)
    assert [o["text"]["text"] for o in listed] == REGIONS
    assert [o["value"] for o in listed] == [str(n) for n in range(250)]

    the_180th = listed[179]
    assert the_180th in select["option_groups"][1]["options"]
    await bot.click(
        ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected=the_180th["value"]
    )
    assert f"done: {REGIONS[179]}" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "responded"
    assert record.decided_by == ALICE and record.decision is not None
    assert record.decision["message"] == REGIONS[179]


async def test_an_answer_past_the_thousandth_can_be_picked(make_bot: Any) -> None:
    """Its index has four digits, as a select of 100 groups of 100 can send."""
    short = [f"r{n}" for n in range(1200)]
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(short, policy))
    bot.slack.most_block_text = MAX_BLOCK_TEXT
    value = await bot.start()
    choices = checked_blocks(bot.posted()["blocks"], surface="message")[-2]
    [select] = choices["elements"]
    assert len(select["option_groups"]) == 12
    assert options_of(select)[1100] == {
        "text": {"type": "plain_text", "text": "r1100", "emoji": True},
        "value": "1100",
    }
    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected="1100")
    assert "done: r1100" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decision is not None
    assert record.decision["message"] == "r1100"


async def test_an_index_past_the_last_answer_decides_nothing(make_bot: Any) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(REGIONS, policy))
    value = await bot.start()
    block_id = bot.posted()["blocks"][-2]["block_id"]
    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=block_id, selected="250")
    await bot.slack.wait_calls("chat.postEphemeral")
    assert "not offered" in bot.slack.called("chat.postEphemeral")[-1]["text"]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()


async def test_250_long_answers_fit_a_compact_card_and_each_can_be_picked(
    make_bot: Any,
) -> None:
    """Their texts together pass Slack's total for a message: the compact card shortens
    each (its start and end kept, each still told apart) so every answer stays offered."""
    long = [f"/srv/exports/{'customer-archive-' * 4}{n:03d}.tar.gz" for n in range(250)]
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(long, policy))
    bot.slack.most_block_text = MAX_BLOCK_TEXT
    value = await bot.start()
    assert [c.method for c in bot.slack.failed] == ["chat.postMessage"]  # the full card
    posted = bot.posted()
    check_message(posted["text"], posted["blocks"])
    choices = checked_blocks(posted["blocks"], surface="message")[-2]
    [select] = choices["elements"]
    texts = [o["text"]["text"] for o in options_of(select)]
    assert len(texts) == 250 and len(set(texts)) == 250 and max(map(len, texts)) == 24
    assert texts[179].endswith("179.tar.gz") and texts[179].startswith("/srv/")

    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected="179")
    assert f"done: {long[179]}" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decision is not None
    assert record.decision["message"] == long[179]


async def test_a_question_of_2000_answers_is_posted_offering_what_a_compact_card_holds(
    make_bot: Any,
) -> None:
    """Even cut to their start and end, 2,000 answers pass Slack's total for a message: the
    compact card offers the first ones that fit, says so, and any of them can be picked."""
    many = [f"region-{n:04d}" for n in range(2000)]
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    bot: Harness = await make_bot(spec=question_spec(many, policy))
    bot.slack.most_block_text = MAX_BLOCK_TEXT
    value = await bot.start()
    posted = bot.posted()
    check_message(posted["text"], posted["blocks"])
    choices = checked_blocks(posted["blocks"], surface="message")[-2]
    [select] = choices["elements"]
    listed = options_of(select)
    assert [o["text"]["text"] for o in listed] == many[: len(listed)]
    assert len(listed) == 375  # 6,000 characters of answers, 16 each at the least
    assert f"first {len(listed)} of 2000" in select["placeholder"]["text"]

    last = listed[-1]["value"]
    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected=last)
    assert f"done: {many[int(last)]}" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decision is not None
    assert record.decision["message"] == many[int(last)]
