"""A batch card too long for Slack in total (each block within its own limit): posted and
redrawn compact, its long parts cut and shown whole by Full details, as a single card's.
Slack's total is undocumented; the fake Slack refuses past the sandbox's."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from batch_agents import spec
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime import Interrupt, ToolCall
from bot.ui import ids
from bot.ui.batch_message import batch_message
from bot.ui.card_summary import CUT_NOTE
from sandbox.blocks import MAX_BLOCK_TEXT, block_text_length, checked_blocks, checked_view
from storage.approvers import ApproverPolicy
from storage.queries import Batch
from storage.records import InterruptRecord

LONG = [f"/srv/archive/{n:03d}/" + "x" * 300 for n in range(100)]


def _drawn(bot: Harness) -> dict[str, Any]:
    """The batch card as last drawn in Slack."""
    updates = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()]
    return updates[-1] if updates else bot.posted(0)


async def test_a_batch_too_long_for_slack_is_posted_compact_decided_and_redrawn(
    make_bot: Any,
) -> None:
    deleted: list[str] = []
    bot: Harness = await make_bot(spec=spec(deleted, LONG))
    bot.slack.most_block_text = MAX_BLOCK_TEXT
    await bot.start(requested_by=CAROL)
    [refused] = bot.slack.failed
    card = bot.posted(0)
    assert refused.args["blocks"][0] == card["blocks"][0]  # the same card, drawn in full
    assert card["blocks"][0]["text"]["text"] == "Approval needed: delete_file, 100 calls"
    checked_blocks(card["blocks"], surface="message")
    text = str(card["blocks"])
    assert CUT_NOTE in text and all(f"{n + 1}. /srv/archive/{n:03d}/" in text for n in range(100))
    assert LONG[0] not in text

    elements = [e for b in card["blocks"] for e in b.get("elements", [])]
    [details] = [e for e in elements if e.get("action_id") == ids.FULL_ARGS]
    assert details["text"]["text"] == "Full details"
    await bot.click(ids.FULL_ARGS, details["value"], user=ALICE)
    await bot.slack.wait_calls("views.open")
    [opened] = bot.slack.called("views.open")
    view = checked_view(opened["view"])
    shown = str(view["blocks"])
    assert all(f"*{n + 1}.*" in shown and path in shown for n, path in enumerate(LONG))

    await bot.batch_click(ids.BATCH_APPROVE, user=ALICE, unticked=frozenset({7}))
    assert (await bot.finished()).startswith("Finished: deleted 99")
    assert sorted(deleted) == sorted(p for n, p in enumerate(LONG) if n != 7)
    await bot.slack.wait_for(
        lambda: _drawn(bot)["blocks"][0]["text"]["text"] == "Decided: delete_file, 100 calls",
        what="the compact card drawn decided",
    )
    drawn = _drawn(bot)
    assert len(bot.slack.failed) == 2  # the decided card in full was refused too
    text = str(drawn["blocks"])
    assert CUT_NOTE in text and "8. /srv/archive/007/" in text and "Excluded by" in text
    assert text.count("Approved by") == 99 and ids.BATCH_APPROVE not in text
    assert ids.FULL_ARGS in text
    noted = f"<@{CAROL}> :ballot_box_with_check:"
    # The requester's note is posted in the background, after the click is decided.
    await bot.slack.wait_for(
        lambda: any(t.startswith(noted) for t in bot.thread()), what="the requester's note"
    )
    notes = [t for t in bot.thread() if t.startswith(noted)]
    assert notes == [
        f"<@{CAROL}> :ballot_box_with_check: 100 calls of `delete_file` decided: "
        "99 approved, 1 excluded"
    ]


NOW = datetime(2026, 11, 25, tzinfo=UTC)


def _batch(states: list[str]) -> list[InterruptRecord]:
    """A batch card's items (the lead first) with long arguments, a long description and
    a long user id deciding, in ``states``."""
    records = []
    for n, state in enumerate(states):
        call = ToolCall(id=f"c{n}", name="d" * 120, args={"path": f"/{n:03d}/" + "x" * 500})
        interrupt = Interrupt(
            id=f"int_{n}",
            name="approval",
            tool_call=call,
            allowed_decisions=("approve", "reject"),
            description="w" * 5000,
        )
        record = InterruptRecord.new(
            interrupt,
            run_id="run_1",
            thread_id="thread_1",
            agent="a" * 200,
            requested_by=CAROL,
            policy=ApproverPolicy(allowed_users=(ALICE,)),
            now=NOW,
            channel=CHANNEL,
        )
        if state != "pending":
            decided = {"state": state, "decided_by": "U0" + "Z" * 9, "decided_at": NOW}
            record = record.model_copy(update=decided)
        records.append(record)
    lead = records[0].id
    records = [r.model_copy(update={"batch": lead}) for r in records]
    records[0] = records[0].model_copy(update={"batch_items": tuple(r.id for r in records)})
    return records


def test_a_full_batch_of_the_longest_items_fits_in_one_message_compact() -> None:
    """A hundred items, waiting or decided with the longest outcome line: too long in full,
    within what Slack takes compact, every item still numbered on it."""
    for states in (["pending"] * 100, ["withdrawn"] * 100, ["pending", "withdrawn"] * 50):
        items = _batch(states)
        full, compact = batch_message(Batch.of(items)), batch_message(Batch.of(items), compact=True)
        assert block_text_length(checked_blocks(full.blocks, surface="message")) > MAX_BLOCK_TEXT
        blocks = checked_blocks(compact.blocks, surface="message")
        assert block_text_length(blocks) <= MAX_BLOCK_TEXT, states[:2]
        assert all(f"{n + 1}. /{n:03d}/" in str(blocks) for n in range(100))
