"""Choices whose first 75 characters are the same (Slack cuts an option's or a button's
text there) still read differently: the end of each is kept, and where even that is the
same, its place in the list."""

from __future__ import annotations

import time
from typing import Any

from blockkit import check_message
from harness import ALICE, CHANNEL, Harness
from test_edit_form_enums import _field, spec_of
from test_questions import question_spec

from bot.agents.policy import Policy
from bot.ui import ids
from bot.ui.option_texts import option_texts
from sandbox.blocks import checked_blocks, options_of

PREFIX = "/srv/backups/" + "customer-archive-" * 4  # 81 characters alike
DAILY, WEEKLY = PREFIX + "daily.tar.gz", PREFIX + "weekly.tar.gz"


async def test_enum_values_alike_for_75_characters_show_different_texts(make_bot: Any) -> None:
    received: list[str] = []
    bot: Harness = await make_bot(spec=spec_of([DAILY, WEEKLY], DAILY, received))
    value = await bot.start()
    element = (await _field(bot, value))["element"]
    texts = [o["text"]["text"] for o in element["options"]]
    assert texts == [PREFIX[:37] + "…" + DAILY[-37:], PREFIX[:37] + "…" + WEEKLY[-37:]]
    assert all(len(t) == 75 for t in texts) and texts[0].endswith("-daily.tar.gz")
    assert [o["value"] for o in element["options"]] == [DAILY, WEEKLY]

    picked = {"type": "static_select", "selected_option": element["options"][1]}
    status, body = await bot.submit_form(value, user=ALICE, values={"arg.where": picked})
    assert status == 200 and "errors" not in body, body
    await bot.finished()
    assert received == [WEEKLY]


async def test_answers_alike_for_75_characters_are_buttons_and_options_that_differ(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    answers = [PREFIX + f"{n:02d}.tar.gz" for n in range(3)]
    bot: Harness = await make_bot(spec=question_spec(answers, policy))
    await bot.start()
    posted = bot.posted()
    check_message(posted["text"], posted["blocks"])
    buttons = posted["blocks"][-2]["elements"]
    assert [b["type"] for b in buttons] == ["button"] * 3
    assert all(len(b["text"]["text"]) == 75 for b in buttons)
    assert [b["text"]["text"][-9:] for b in buttons] == ["00.tar.gz", "01.tar.gz", "02.tar.gz"]


async def test_answers_alike_but_in_the_middle_are_told_apart_in_the_select(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve", "reject"))
    answers = [f"{'a' * 40}{n}{'z' * 40}" for n in range(6)] + ["same", "same"]
    bot: Harness = await make_bot(spec=question_spec(answers, policy))
    value = await bot.start()
    choices = checked_blocks(bot.posted()["blocks"], surface="message")[-2]
    [select] = choices["elements"]
    texts = [o["text"]["text"] for o in options_of(select)]
    assert len(set(texts)) == len(answers) and all(len(t) <= 75 for t in texts)
    assert texts[3].endswith(" (#4)") and texts[6:] == ["same (#7)", "same (#8)"]

    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=choices["block_id"], selected="3")
    assert f"done: {answers[3]}" in await bot.finished()
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.decision is not None
    assert record.decision["message"] == answers[3]


def test_a_numbered_text_never_meets_another_choices_own() -> None:
    values = ["x", "x", "x (#2)"]
    texts = option_texts(values, 75)
    assert len(set(texts)) == 3 and texts[:2] == ["x (#1)", "x (#2)"]
    assert texts[2] == "x (#2) (#3)"


def test_choices_made_to_meet_each_numbered_text_are_told_apart_in_linear_time() -> None:
    """Each value is the text the one before it gets once numbered: 10,000 such values
    (an agent's answers) are told apart at once, not one numbering pass per value."""
    values = ["x", "x"]
    for n in range(2, 10_000):
        suffix = f" (#{n})"
        values.append(option_texts([values[-1]], 75 - len(suffix))[0] + suffix)
    started = time.perf_counter()
    texts = option_texts(values, 75)
    assert time.perf_counter() - started < 3.0
    assert len(set(texts)) == len(values) and all(len(t) <= 75 for t in texts)
    assert all(t.endswith(f" (#{n + 1})") for n, t in enumerate(texts))
