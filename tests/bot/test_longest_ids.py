"""The cards of the longest record ids storage accepts (run and interrupt ids of 128
characters each, so 257 in all) stay within Block Kit's limits, and the short key a small
field carries for such an id still withdraws the request and answers its question."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from blockkit import LIMITS, check_blocks, check_message
from harness import ALICE, CAROL, CHANNEL, Harness

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall
from bot.ui import ids
from bot.ui.batch_message import batch_message
from bot.ui.listing import Shown, pending_blocks
from bot.ui.posting import post_interrupt
from bot.ui.refs import short_ref
from bot.ui.refusals import reason_text
from storage.approvers import ApproverPolicy
from storage.queries import Batch
from storage.records import InterruptRecord

RUN = "r" * 128
IID = "i" * 128
NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def _records(count: int, **fields: Any) -> list[InterruptRecord]:
    """Pending calls of one run whose 257-character ids differ only in their last digits."""
    records = []
    for n in range(count):
        call = ToolCall(id=f"c{n}", name="delete_files", args={"paths": [f"/tmp/{n}"]})
        record = InterruptRecord.new(
            Interrupt(id=f"{IID[:-3]}{n:03d}", name="approval", tool_call=call),
            run_id=RUN,
            thread_id="t" * 128,
            agent="cleanup",
            requested_by=CAROL,
            policy=ApproverPolicy(allowed_users=(ALICE,)),
            now=NOW,
            channel=CHANNEL,
        )
        records.append(record.model_copy(update=fields))
    return records


def test_short_keys_fit_an_option_value_and_tell_the_longest_ids_apart() -> None:
    """``withdraw <key>`` fits an option's 150 characters; ids differing only past the first
    141 characters get different keys; a shorter id is carried as it is."""
    long_ids = [r.id for r in _records(100)]
    keys = {short_ref(rid) for rid in long_ids}
    assert len(keys) == 100
    assert all(len(f"{ids.WITHDRAW} {key}") <= LIMITS["option_value"] for key in keys)
    assert all(key.startswith(RUN + "/") for key in keys)
    assert short_ref("run_1/int_1") == "run_1/int_1"


def test_home_decides_requests_whose_ids_differ_only_at_their_end() -> None:
    """App Home's Approve and Deny rows each have a block id of their own: cut to 255
    characters, ids of one run that differ only at their end would be one id twice, and
    Slack refuses the whole tab."""
    records = _records(17, permalink="https://example.slack.com/archives/C0OPS/p1")
    blocks = pending_blocks(
        records,
        viewer=ALICE,
        now=NOW,
        decide_here=True,
        shown=Shown(before=0, listed=17, total=40),
        next_page=f"{'9' * 15} {records[-1].id}|{'9' * 15} {records[-1].id}",
    )
    check_blocks(blocks, max_blocks=LIMITS["modal_blocks"])
    assert len([b for b in blocks if b.get("block_id", "").startswith("home ")]) == 17


def test_a_batch_card_of_the_longest_ids_is_valid_whole_and_compact() -> None:
    """A batch card's overflow menu withdraws its run: its option carries the lead's key."""
    items = _records(100)
    items = [r.model_copy(update={"batch": items[0].id}) for r in items]
    items[0] = items[0].model_copy(update={"batch_items": tuple(r.id for r in items)})
    for compact in (False, True):
        message = batch_message(Batch.of(items), compact=compact)
        check_message(message.text, message.blocks)


async def _posted(
    bot: Harness, interrupt: Interrupt, **policy: Any
) -> tuple[InterruptRecord, dict[str, Any]]:
    """Store ``interrupt`` of a run with a 128-character id and post its card, as a run's
    interrupt is; the record and the card Slack was sent, checked against Block Kit."""
    record = InterruptRecord.new(
        interrupt,
        run_id=RUN,
        thread_id="t" * 128,
        agent="nightly-job",  # an agent this process does not run: nothing to cancel
        requested_by=CAROL,
        policy=ApproverPolicy(allowed_users=(ALICE,), **policy),
        now=bot.clock.now(),
        channel=CHANNEL,
    )
    assert len(record.id) == 257
    await bot.services.storage.interrupts.create_interrupt(record)
    assert await post_interrupt(bot.services, record) is not None
    card = bot.posted(0)
    check_message(card["text"], card["blocks"])
    return record, card


def _element(card: dict[str, Any], kind: str) -> tuple[dict[str, Any], dict[str, Any]]:
    [found] = [(b, e) for b in card["blocks"] for e in b.get("elements", []) if e["type"] == kind]
    return found


async def test_a_request_with_a_257_character_id_is_withdrawn_from_its_cards_menu(
    make_bot: Any,
) -> None:
    """The overflow menu's option holds 150 characters: it carries a short key, and the
    requester's click on it withdraws the request the key names in storage."""
    bot: Harness = await make_bot()
    call = ToolCall(id="c1", name="delete_files", args={"paths": ["/tmp/a"]})
    record, card = await _posted(bot, Interrupt(id=IID, name="approval", tool_call=call))
    _, menu = _element(card, "overflow")
    option = menu["options"][0]["value"]
    assert option == f"{ids.WITHDRAW} {short_ref(record.id)}" and len(option) <= 150

    # A key no pending record of the run has names nothing: the click is told so.
    await bot.click(ids.MORE, "", user=CAROL, selected=f"{ids.WITHDRAW} {RUN}/~AAAAAAAAAAA")
    await bot.slack.wait_calls("chat.postEphemeral")
    assert bot.slack.called("chat.postEphemeral")[-1]["text"] == reason_text("not_pending")
    still = await bot.services.storage.queries.get(record.id)
    assert still is not None and still.state == "pending"

    await bot.click(ids.MORE, "", user=CAROL, selected=option)
    await bot.slack.wait_calls("chat.update")
    update = bot.slack.called("chat.update")[-1]
    assert update["blocks"][0]["text"]["text"] == "Withdrawn: delete_files"
    assert f"Withdrawn by <@{CAROL}>" in str(update["blocks"])
    withdrawn = await bot.services.storage.queries.get(record.id)
    assert withdrawn is not None and withdrawn.state == "cancelled"

    # The key names no pending record now: a second click is told so, and changes nothing.
    await bot.click(ids.MORE, "", user=CAROL, selected=option)
    await bot.slack.wait_calls("chat.postEphemeral", count=2)
    assert bot.slack.called("chat.postEphemeral")[-1]["text"] == reason_text("not_pending")


async def test_a_question_with_a_257_character_id_is_answered_from_its_select(
    make_bot: Any,
) -> None:
    """A question's block id holds 255 characters: it carries the short key and the digest,
    and an approver's pick from its select answers the question the key names."""
    bot: Harness = await make_bot()
    regions = tuple(f"region-{n}" for n in range(8))
    question = Interrupt(id=IID, name="question", reason="Where?", question=True, options=regions)
    record, card = await _posted(bot, question, decisions=("respond", "reject"))
    block, select = _element(card, "static_select")
    assert block["block_id"] == f"{ids.CHOICES_BLOCK} {short_ref(record.id)} {record.args_digest}"
    assert [o["value"] for o in select["options"]] == [str(n) for n in range(8)]

    await bot.click(ids.CHOOSE, "", user=ALICE, block_id=block["block_id"], selected="6")
    await bot.clicks_done()
    answered = await bot.services.storage.queries.get(record.id)
    assert answered is not None and answered.state == "responded"
    assert answered.decided_by == ALICE and answered.decision is not None
    assert answered.decision["message"] == "region-6"
