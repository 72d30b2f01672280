"""A script whose reply is lost after it ran (a failover, a proxy's reset) is sent again by
redis-py's retry: the caller gets the answer the first run gave, not a refusal of itself.
On one server, where a lost reply can be staged in redis-py's reader.

Here, writes and first-time marks: a save, a create, a lease, a claim or an audit entry
sent again is one write, and the first of something is still told it is the first."""

from __future__ import annotations

from functools import partial

import pytest
from redis_faults import reply_lost_once
from storage_helpers import NOW, make_record

from agent_runtime.errors import ThreadBusyError
from storage import Storage
from storage.api_clients import ClientExistsError
from storage.audit import AuditEntry
from storage.errors import DuplicateInterruptError


async def test_a_save_sent_again_finds_its_own_write(one_server: Storage) -> None:
    storage = one_server
    await storage.sessions.save("thread_t1", {"n": 1}, expected_version=0)
    with reply_lost_once() as lost:
        assert await storage.sessions.save("thread_t1", {"n": 2}, expected_version=1) == 2
    assert lost == ["EVALSHA"]
    stored = await storage.sessions.load("thread_t1")
    assert stored is not None and (stored.version, stored.snapshot) == (2, {"n": 2})


async def test_interrupts_created_again_by_the_same_call_are_created(one_server: Storage) -> None:
    """The call that stored them is told so (its caller posts the cards now); another
    call storing them again is told they exist (its caller leaves them to the outbox)."""
    record = make_record()
    with reply_lost_once() as lost:
        await one_server.interrupts.create_interrupts([record])
    assert lost == ["EVALSHA"]
    assert await one_server.queries.get(record.id) is not None
    with pytest.raises(DuplicateInterruptError):
        await one_server.interrupts.create_interrupts([record])


async def test_an_audit_entry_sent_again_is_added_once(one_server: Storage) -> None:
    entry = AuditEntry(
        event="message_updated", record_id="run_a1/int_1", run_id="run_a1", at=NOW, detail="x"
    )
    with reply_lost_once(naming="message_updated") as lost:
        ref = await one_server.audit.append(entry)
    assert lost == ["EVALSHA"]
    [stored] = await one_server.audit.read()
    assert stored.entry_id == ref and stored.event == "message_updated"
    await one_server.audit.append(entry)  # another call adds another entry
    assert len(await one_server.audit.read()) == 2


async def test_a_first_delivery_whose_claim_was_sent_again_is_still_the_first(
    one_server: Storage,
) -> None:
    """A Slack event whose claim lost its reply is acted on, not dropped as a retry."""
    with reply_lost_once(naming="Ev0LOST", command="SET") as lost:
        assert await one_server.deliveries.first("Ev0LOST")
    assert lost == ["SET"]
    assert not await one_server.deliveries.first("Ev0LOST")  # Slack's own retry


async def test_a_slack_request_whose_check_was_sent_again_is_still_new(
    one_server: Storage,
) -> None:
    """A click whose replay check lost its reply is let in, not refused as a replay."""
    with reply_lost_once(naming=":signed:", command="SET") as lost:
        assert await one_server.deliveries.first_signed("v0=" + "1" * 64)
    assert lost == ["SET"]
    assert not await one_server.deliveries.first_signed("v0=" + "1" * 64)  # a replay


async def test_an_end_marked_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A job's outcome (or a run's end) whose mark lost its reply is posted, not refused
    as reported already."""
    run_id = "req_" + "e" * 32
    with reply_lost_once(naming=run_id, command="SET") as lost:
        assert await one_server.resume.first_end(run_id)
    assert lost == ["SET"]
    assert not await one_server.resume.first_end(run_id)  # another report


async def test_a_reported_outcome_taken_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A job's outcome whose step lost its reply is told, not taken for itself sent again;
    the same report sent again later is, and another report is not."""
    run_id = "req_" + "f" * 32
    report = partial(
        one_server.job_runs.report,
        at=NOW,
        withdrawal=AuditEntry(event="outcome_withdrawn", record_id="", run_id=run_id, at=NOW),
    )
    with reply_lost_once(naming=run_id) as lost:
        assert await report(run_id, "digest-a", outcome='{"not_run": "a"}') == "first"
    assert lost == ["EVALSHA"]
    assert await report(run_id, "digest-a", outcome='{"not_run": "a"}') == "again"
    assert await report(run_id, "digest-b", outcome='{"not_run": "b"}') == "other"
    assert (await one_server.job_runs.read(run_id)).outcome == '{"not_run": "a"}'


async def test_a_client_created_again_by_the_same_call_gets_its_token(one_server: Storage) -> None:
    """``signoff token create`` whose write lost its reply prints the token, which works,
    rather than "a client of that name exists" for a client nobody has a token of."""
    with reply_lost_once(naming="nightly-cleanup", command="HSETNX") as lost:
        client, token = await one_server.api_clients.create("nightly-cleanup", now=NOW)
    assert lost == ["HSETNX"]
    found = await one_server.api_clients.authenticate(token)
    assert found is not None and found.name == client.name
    with pytest.raises(ClientExistsError):  # another call: refused
        await one_server.api_clients.create("nightly-cleanup", now=NOW)


async def test_a_first_failed_post_reported_again_is_still_the_first(one_server: Storage) -> None:
    """A card Slack refused whose record's reply was lost: its requester is still told, once."""
    record = make_record()
    await one_server.interrupts.create_interrupt(record)
    with reply_lost_once(naming="channel_not_found") as lost:
        assert await one_server.interrupts.post_failed(record.id, "channel_not_found")
    assert lost == ["EVALSHA"]
    assert not await one_server.interrupts.post_failed(record.id, "channel_not_found")


async def test_a_post_marked_again_is_audited_once(one_server: Storage) -> None:
    """A card (its first post refused) whose mark lost its reply, then marked again by the
    outbox, has one "posted" entry in the audit log; a card posted as another message is
    a new post."""
    record = await one_server.interrupts.create_interrupt(make_record())
    assert await one_server.interrupts.post_failed(record.id, "not_in_channel")
    with reply_lost_once(naming=record.id) as lost:
        marked = await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=NOW)
    assert lost == ["EVALSHA"]
    assert marked is not None and (marked.message_ts, marked.post_error) == ("1700.1", None)
    await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.1", now=NOW)

    async def posts() -> list[str | None]:
        return [e.message_ts for e in await one_server.audit.read() if e.event == "posted"]

    assert await posts() == ["1700.1"]
    await one_server.interrupts.mark_posted(record.id, "CAPPROVALS", "1700.2", now=NOW)
    assert await posts() == ["1700.1", "1700.2"]


async def test_a_threads_lease_taken_again_by_the_same_call_is_held(one_server: Storage) -> None:
    """A resume whose lease lost its reply runs, not refused as "being run elsewhere" by
    its own lease (which would hold the thread until it lapsed)."""
    with reply_lost_once(naming="thread_l1", command="SET") as lost:
        async with one_server.sessions.lease("thread_l1"):
            assert lost == ["SET"]
            with pytest.raises(ThreadBusyError):  # another resume, meanwhile
                async with one_server.sessions.lease("thread_l1"):
                    pass
    async with one_server.sessions.lease("thread_l1"):  # let go at the end
        pass


async def test_a_tool_outcome_audited_again_by_the_same_call_is_still_the_first(
    one_server: Storage,
) -> None:
    """A tool's outcome told by a worker catching its run up, whose audit lost its reply,
    is still posted in the run's thread (it posts what it audited first), and audited once."""
    entry = AuditEntry(event="tool_ran", record_id="", run_id="run_a1", at=NOW, detail="rm: ok")
    with reply_lost_once(naming="thread_1 call_1") as lost:
        ref = await one_server.audit.append_once(entry, once="thread_1 call_1 ")
    assert lost == ["EVALSHA"]
    [stored] = await one_server.audit.read()
    assert ref is not None and stored.entry_id == ref
    assert await one_server.audit.append_once(entry, once="thread_1 call_1 ") is None  # another
    assert len(await one_server.audit.read()) == 1


async def test_approvers_refreshed_again_by_the_same_call_are_audited_once(
    one_server: Storage,
) -> None:
    """A group's new members stored by a call whose reply was lost: the audit log says the
    approvers were refreshed once, not twice."""
    policy = {"allowed_users": (), "allowed_groups": ("SONCALL",), "group_members": ("UOLD",)}
    record = await one_server.interrupts.create_interrupt(make_record(**policy))
    with reply_lost_once(naming=record.id) as lost:
        updated = await one_server.interrupts.set_group_members(
            record, ["UNEW"], now=NOW, asked_by="UNEW"
        )
    assert lost == ["EVALSHA"]
    assert updated is not None and updated.policy.group_members == ("UNEW",)
    events = [e.event for e in await one_server.audit.read()]
    assert events.count("approvers_refreshed") == 1


async def test_a_waiting_card_claimed_again_by_the_same_call_is_still_its_claimers(
    one_server: Storage,
) -> None:
    """A card Slack refused, claimed when the app joins its channel by a call whose reply
    was lost: the call is handed the card to post at once, and another call is not."""
    record = await one_server.interrupts.create_interrupt(make_record())
    assert await one_server.interrupts.post_failed(record.id, "not_in_channel")
    with reply_lost_once(naming=record.id) as lost:
        claimed = await one_server.interrupts.claim_waiting("CAPPROVALS", NOW)
    assert lost == ["EVALSHA"]
    assert [r.id for r in claimed] == [record.id]
    assert await one_server.interrupts.claim_waiting("CAPPROVALS", NOW) == []
