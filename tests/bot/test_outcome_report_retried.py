"""A job's outcome report Redis failed to take part of leaves nothing behind: the job's
retry, even with another report (it ran the command again), is the outcome kept, and the
audit trail tells which report that is."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import ALICE
from redis import exceptions as rexc
from requests_jobs import Jobs

from bot.ui import ids


async def test_a_report_redis_failed_to_audit_leaves_nothing_and_its_retry_is_kept(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, made = await jobs.ask()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    storage = jobs.bot.services.storage
    script, refused = storage.client.script, []

    def audit_refused_once(name: str) -> Any:
        """Redis drops the connection under the outcome's audit step, once."""
        run = script(name)

        async def running(*, keys: list[str], args: list[Any]) -> Any:
            if name == "audit_once" and str(args[0]).startswith("outcome ") and not refused:
                refused.append(name)
                raise rexc.ConnectionError("Connection reset by peer")
            return await run(keys=keys, args=args)

        return running

    monkeypatch.setattr(storage.client, "script", audit_refused_once)
    first = {"exit_status": 1, "duration_seconds": 3.0}
    status, failed = await jobs.post(made["status_url"] + "/outcome", first)
    assert status == 503 and refused == ["audit_once"], failed
    _, view = await jobs.get(made["status_url"])
    assert view["outcome"] is None, view

    retry = {"exit_status": 0, "duration_seconds": 12.5, "summary": "deleted 42 volumes"}
    status, told = await jobs.post(made["status_url"] + "/outcome", retry)
    assert status == 200, told
    _, view = await jobs.get(made["status_url"])
    assert (view["outcome"]["exit_status"], view["outcome"]["duration_seconds"]) == (0, 12.5)
    assert [t for t in jobs.bot.thread() if "Delete 42 stale volumes:" in t] == [
        "Delete 42 stale volumes: succeeded in 12.5 s.\ndeleted 42 volumes"
    ]
    [entry] = [e for e in await storage.audit.read(count=100) if e.event.startswith("outcome")]
    assert (entry.event, json.loads(entry.detail)) == ("outcome", retry)
    status, twice = await jobs.post(made["status_url"] + "/outcome", first)
    assert status == 409 and "already" in twice["error"]


@pytest.mark.parametrize("again", [False, True])
async def test_a_report_audited_before_its_step_failed_is_withdrawn_when_another_is_kept(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, again: bool
) -> None:
    """The audit entry was added but its reply lost: the report is forgotten, and the trail
    withdraws it before it tells the retry's report, the one kept; the same report sent
    again keeps its one entry."""
    _, made = await jobs.ask()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    storage = jobs.bot.services.storage
    script, lost = storage.client.script, []

    def reply_lost_once(name: str) -> Any:
        """Redis adds the outcome's audit entry, then the connection drops, once."""
        run = script(name)

        async def running(*, keys: list[str], args: list[Any]) -> Any:
            stored = await run(keys=keys, args=args)
            if name == "audit_once" and str(args[0]).startswith("outcome ") and not lost:
                lost.append(name)
                raise rexc.ConnectionError("Connection reset by peer")
            return stored

        return running

    monkeypatch.setattr(storage.client, "script", reply_lost_once)
    first = {"exit_status": 1, "duration_seconds": 3.0}
    status, failed = await jobs.post(made["status_url"] + "/outcome", first)
    assert status == 503 and lost == ["audit_once"], failed
    _, view = await jobs.get(made["status_url"])
    assert view["outcome"] is None, view

    retry = first if again else {"exit_status": 0, "duration_seconds": 12.5}
    status, told = await jobs.post(made["status_url"] + "/outcome", retry)
    assert status == 200, told
    trail = [
        (e.event, json.loads(e.detail)["exit_status"])
        for e in await storage.audit.read(count=100)
        if e.event.startswith("outcome")
    ]
    kept = [("outcome", 1)] if again else [("outcome", 1), ("outcome_withdrawn", 1), ("outcome", 0)]
    assert trail == kept
    told_in_thread = "failed (exit 1) in 3.0 s." if again else "succeeded in 12.5 s."
    assert [t for t in jobs.bot.thread() if "Delete 42 stale volumes:" in t] == [
        f"Delete 42 stale volumes: {told_in_thread}"
    ]
