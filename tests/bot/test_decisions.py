"""Decisions over signed HTTP: approve, deny, edit, reply (issue 4, tests 1-4), approve and
trust for the run, and what the audit trail and the thread say of the tool and the run."""

from __future__ import annotations

import json
from typing import Any

from batch_agents import spec as deletions_spec
from harness import ALICE, BOB, CAROL, CHANNEL, Harness, one_delete_spec
from redis_faults import reply_lost_once

from agent_runtime import tool
from agent_runtime.interrupts import Remember
from bot.agents.policy import AgentSpec, Policy
from bot.ui import ids


def _tool_messages(bot: Harness) -> list[str]:
    """What the model was told each tool returned, across every model request."""
    agent = bot.services.registry.agent("cleanup")
    requests = agent.model.requests  # type: ignore[attr-defined]
    return [m.content for r in requests for m in r.messages if m.role == "tool"]


async def test_approve_runs_the_tool_once_updates_the_message_and_posts_the_result(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    posted = bot.posted()
    assert posted["channel"] == CHANNEL and "delete_files" in posted["text"]

    response = await bot.click(ids.APPROVE, value, user=ALICE)
    assert response.status == 200
    assert "deleted 2 file(s)" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run

    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]
    update = bot.slack.called("chat.update")[-1]
    assert update["ts"] == bot.message_ts() and update["channel"] == CHANNEL
    assert "actions" not in [b["type"] for b in update["blocks"]]
    assert any(f"Approved by <@{ALICE}>" in str(b) for b in update["blocks"])
    # Who asked, and who could approve, as the pending card said; who asked stays.
    assert f"Who may approve: <@{ALICE}>, <@{BOB}>, not the requester" in str(posted["blocks"])
    assert f"Requested by <@{CAROL}>" in str(update["blocks"])
    assert any("delete_files: deleted 2 file(s)" in t for t in bot.thread())
    # The tool's outcome and the run's end are in the audit trail, tied to the decision.
    trail = await bot.services.storage.audit.read(count=50)
    [ran] = [e for e in trail if e.event == "tool_ran"]
    assert ran.record_id == bot.record_id(value) and ran.detail == "delete_files: deleted 2 file(s)"
    assert [e.detail for e in trail if e.event == "finished"] == [
        "Finished: done: deleted 2 file(s)"
    ]


async def test_deny_with_a_reason_never_runs_the_tool_and_the_model_gets_the_reason(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.click(ids.DENY, value, user=BOB)
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    # What its button carried, and the message it was opened from.
    opened_from = f"{value} {CHANNEL} {bot.message_ts()}"
    assert view["callback_id"] == ids.DENY_VIEW and view["private_metadata"] == opened_from
    # Slack adds "(optional)" to an optional input's label itself: the label says it not.
    [reason] = [b for b in view["blocks"] if b["type"] == "input"]
    assert reason["label"]["text"] == "Reason" and reason["optional"] is True

    status, body = await bot.submit(ids.DENY_VIEW, value, user=BOB, text="not on a Friday")
    assert status == 200 and "errors" not in body
    await bot.finished()
    assert bot.tool_log.calls == []
    assert "not on a Friday" in _tool_messages(bot)
    await bot.services.background.idle()  # the card is redrawn after the form's ack
    update = bot.slack.called("chat.update")[-1]
    assert any("not on a Friday" in str(b) for b in update["blocks"])


async def test_edit_with_valid_args_runs_the_tool_with_them(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    await bot.click(ids.EDIT, value, user=ALICE)
    await bot.slack.wait_calls("views.open")
    view = bot.slack.called("views.open")[-1]["view"]
    # A form from the tool's schema: paths (a list of strings) is one line per item.
    [paths] = view["blocks"][1:]
    assert paths["block_id"] == "arg.paths" and paths["element"]["multiline"]
    assert paths["element"]["initial_value"] == "/tmp/a\n/tmp/b"
    assert paths["hint"]["text"].startswith("One per line")

    status, body = await bot.submit(ids.EDIT_VIEW, value, user=ALICE, text='{"paths": ["/tmp/a"]}')
    assert status == 200 and "errors" not in body
    await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a"]}]


async def test_edit_with_bad_json_or_bad_args_shows_field_errors_and_records_nothing(
    make_bot: Any,
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    nested = '{"paths": ' + "[" * 1200 + "]" * 1200 + "}"
    for text in ('{"paths": [', '{"paths": "not a list"}', '["/tmp/a"]', nested, "[" * 2400):
        status, body = await bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=text)
        assert status == 200
        answer = json.loads(body)
        assert answer["response_action"] == "errors" and answer["errors"][ids.INPUT_BLOCK]
        if text in (nested, "[" * 2400):
            assert "nest more than 32 levels" in answer["errors"][ids.INPUT_BLOCK]
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "pending" and record.votes == ()
    assert bot.slack.called("chat.update") == []


async def test_reply_becomes_the_tool_result_and_the_tool_never_runs(make_bot: Any) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    status, _ = await bot.submit(ids.REPLY_VIEW, value, user=ALICE, text="already cleaned by hand")
    assert status == 200
    await bot.finished()
    assert bot.tool_log.calls == []
    assert "already cleaned by hand" in _tool_messages(bot)


def _interrupt_messages(bot: Harness) -> list[dict[str, Any]]:
    """Every interrupt message posted so far (those carrying decision buttons)."""
    posts = bot.slack.called("chat.postMessage")
    return [p for p in posts if any(b["type"] == "actions" for b in p.get("blocks") or ())]


async def test_approve_and_trust_covers_later_calls_of_the_run_and_no_other_run(
    make_bot: Any,
) -> None:
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), trust=Remember(scope="run"))
    bot: Harness = await make_bot(policy, then=({"paths": ["/tmp/c"]},))
    value = await bot.start(requested_by=CAROL)
    [asked] = _interrupt_messages(bot)
    trust = [e for e in asked["blocks"][-1]["elements"] if e["action_id"] == ids.TRUST]
    assert [e["text"]["text"] for e in trust] == ["Approve and trust for this run"]

    await bot.click(ids.TRUST, value, user=ALICE)
    assert "deleted 1 file(s)" in await bot.finished()
    # The run's second delete_files call ran on the trust: no new approval was asked.
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}, {"paths": ["/tmp/c"]}]
    assert len(_interrupt_messages(bot)) == 1
    record = await bot.services.storage.queries.get(bot.record_id(value))
    assert record is not None and record.state == "approved" and record.decided_by == ALICE

    # Another run is outside the run's scope: it asks again, and nothing runs meanwhile.
    await bot.start("clean up again", requested_by=CAROL)
    await bot.slack.wait_for(lambda: len(_interrupt_messages(bot)) == 2, what="a second ask")
    assert len(bot.tool_log.calls) == 2


async def test_a_forged_button_for_a_decision_not_offered_opens_no_modal(make_bot: Any) -> None:
    bot: Harness = await make_bot(Policy(channel=CHANNEL, users=(ALICE,), decisions=("approve",)))
    value = await bot.start()
    for action in (ids.DENY, ids.EDIT, ids.REPLY):
        response = await bot.click(action, value, user=ALICE)
        assert response.status == 200
    await bot.slack.wait_calls("chat.postEphemeral", 3)
    assert bot.slack.called("views.open") == []
    notes = [c["text"] for c in bot.slack.called("chat.postEphemeral")]
    assert notes == ["That decision is not offered for this request."] * 3


async def test_a_denial_whose_reply_redis_lost_is_taken_not_refused(make_bot: Any) -> None:
    """The modal's decision ran in Redis, its reply was lost and redis-py sent it again:
    the approver's denial stands, and they are not told someone else decided."""
    bot: Harness = await make_bot()
    value = await bot.start()
    with reply_lost_once(naming=bot.record_id(value)) as lost:
        status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert lost == ["EVALSHA"]
    assert status == 200 and "errors" not in body, body
    stored = await bot.services.storage.queries.get(bot.record_id(value))
    assert stored is not None and (stored.state, stored.decided_by) == ("denied", ALICE)
    assert (await bot.finished()).startswith("Finished")
    assert bot.services.metrics.decisions == {"denied": 1}  # its first send's, counted


async def test_a_card_approved_with_trust_for_the_run_says_the_runs_later_calls_need_no_card(
    make_bot: Any,
) -> None:
    """The run's later calls of the tool run on the trust without a card of their own: the
    card it was given on is the only place that says so."""
    policy = Policy(channel=CHANNEL, users=(ALICE, BOB), trust=Remember(scope="run"))
    bot: Harness = await make_bot(policy, then=({"paths": ["/tmp/c"]},))
    value = await bot.start(requested_by=CAROL)
    await bot.click(ids.TRUST, value, user=ALICE)
    assert "deleted 1 file(s)" in await bot.finished()
    await bot.settled()  # the card is drawn where it was decided, not by the resumed run
    decided = [u for u in bot.slack.called("chat.update") if u["ts"] == bot.message_ts()][-1]
    blocks = decided["blocks"]
    context = [e["text"] for b in blocks if b["type"] == "context" for e in b["elements"]]
    assert any(
        "Trusted for the rest of this run: `delete_files` of *cleanup*, with any arguments" in t
        for t in context
    ), context


def _failing_spec(error: str) -> AgentSpec:
    """An agent whose approved ``delete_files`` raises ``error``."""

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files (here: fail)."""
        raise OSError(error)

    return one_delete_spec(delete_files, Policy(channel=CHANNEL, users=(ALICE,)))


async def test_an_approved_tool_that_fails_is_audited_as_failed_with_its_error_cut_to_500(
    make_bot: Any,
) -> None:
    error = "disk is read-only " + "x" * 600
    bot: Harness = await make_bot(spec=_failing_spec(error))
    value = await bot.start()
    await bot.click(ids.APPROVE, value, user=ALICE)
    await bot.finished()
    trail = await bot.services.storage.audit.read(count=50)
    assert [e.event for e in trail if e.event.startswith("tool_")] == ["tool_failed"]
    [failed] = [e for e in trail if e.event == "tool_failed"]
    assert failed.record_id == bot.record_id(value)
    assert failed.detail.startswith("delete_files failed: disk is read-only")
    assert len(failed.detail) == 500  # the first 500 characters, as documented
    said = next(t for t in bot.thread() if t.startswith("delete_files failed:"))
    assert "disk is read-only" in said  # the thread does not say it ran


async def test_a_run_whose_round_had_three_cards_goes_on_in_the_first_cards_thread(
    make_bot: Any,
) -> None:
    """Three calls, three cards, approved in order: each call's result is told under its
    own card, and the run's end in the thread of the first card posted (storage gives a
    round's records in id order, which is not the order their cards were posted in)."""
    deleted: list[str] = []
    paths = ["/tmp/a", "/tmp/b", "/tmp/c"]
    bot: Harness = await make_bot(spec=deletions_spec(deleted, paths, batch=False))
    await bot.start(requested_by=CAROL)
    await bot.slack.wait_calls("chat.postMessage", 3)
    ts = [str(a["ts"]) for a in bot.slack.answers("chat.postMessage")]
    for card, card_ts in zip(bot.slack.called("chat.postMessage"), ts, strict=True):
        value = card["blocks"][-1]["elements"][0]["value"]
        await bot.click(ids.APPROVE, value, user=ALICE, message_ts=card_ts)
    assert (await bot.finished()).startswith("Finished: deleted 3")  # the first card's thread
    assert sorted(deleted) == paths
    posts = bot.slack.called("chat.postMessage")
    told = [p["thread_ts"] for p in posts if p.get("text") == "delete_file: deleted"]
    assert sorted(told) == sorted(ts)  # each under its own card
    ends = [p["thread_ts"] for p in posts if str(p.get("text")).startswith("Finished")]
    assert ends == [ts[0]]


async def test_a_run_that_stops_short_is_audited_as_stopped_with_its_reason(
    make_bot: Any,
) -> None:
    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete files."""
        return f"deleted {len(paths)} file(s)"

    policy = Policy(channel=CHANNEL, users=(ALICE,))
    # the model's turn after the tool is one step too many
    spec = one_delete_spec(delete_files, policy, max_steps=1)
    bot: Harness = await make_bot(spec=spec)
    await bot.click(ids.APPROVE, await bot.start(), user=ALICE)
    assert (await bot.finished()).startswith("Stopped (max_steps): stopped after 1 steps")
    trail = await bot.services.storage.audit.read(count=50)
    ended = [e for e in trail if e.event in ("finished", "stopped_max_steps")]
    assert [(e.event, e.detail) for e in ended] == [
        ("stopped_max_steps", "Stopped (max_steps): stopped after 1 steps")
    ]
