"""An approved job that did not run says so: its card reads approved, so the outcome it
reports (``not_run``) is what tells the card's thread and the audit trail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from harness import ALICE
from requests_jobs import Jobs

import signoff
from bot.ui import ids


async def _approved(jobs: Jobs) -> dict[str, Any]:
    _, made = await jobs.ask()
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.get(made["status_url"] + "?wait=10")
    return made


async def test_a_job_that_did_not_run_says_why_in_the_thread_and_the_audit(jobs: Jobs) -> None:
    made = await _approved(jobs)
    async with signoff.Client(jobs.base, jobs.token) as client:
        await client.report_not_run(made["id"], "the disk check failed <!channel>")
    assert jobs.bot.thread()[-1] == (
        "Delete 42 stale volumes: not run: the disk check failed &lt;!channel&gt;"
    )
    audit = await jobs.bot.services.storage.audit.read(count=100)
    [entry] = [e for e in audit if e.event == "outcome"]
    assert json.loads(entry.detail) == {
        "summary": "",
        "not_run": "the disk check failed <!channel>",
    }
    report = {"exit_status": 0, "duration_seconds": 1.0}
    status, twice = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 409 and "already" in twice["error"]


@pytest.mark.parametrize(
    ("report", "says"),
    [
        ({"exit_status": 0}, "give exit_status and duration_seconds, or not_run"),
        ({"summary": "done"}, "give exit_status and duration_seconds, or not_run"),
        ({"not_run": "x", "exit_status": 1}, "give no exit_status with it"),
        ({"not_run": ""}, "not_run"),
    ],
)
async def test_an_outcome_neither_run_nor_not_run_is_refused_and_a_good_one_still_taken(
    jobs: Jobs, report: dict[str, Any], says: str
) -> None:
    made = await _approved(jobs)
    told = len(jobs.bot.thread())
    status, refused = await jobs.post(made["status_url"] + "/outcome", report)
    assert status == 400 and says in refused["error"], refused
    assert len(jobs.bot.thread()) == told
    status, _ = await jobs.post(made["status_url"] + "/outcome", {"not_run": "stopped"})
    assert status == 200 and jobs.bot.thread()[-1].endswith(": not run: stopped")
