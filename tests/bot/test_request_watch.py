"""The reader that wakes long-polls when their request changes: one that ends on an
unexpected error says so in the log, and the next long-poll starts another."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import pytest
from harness import ALICE
from requests_jobs import Jobs

from bot.ui import ids


async def test_a_reader_that_fails_is_logged_and_the_next_long_poll_starts_another(
    jobs: Jobs, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    audit = jobs.bot.services.storage.audit
    follow, failed, reading = audit.follow_requests, list[asyncio.Task[Any]](), asyncio.Event()

    async def following(**kw: Any) -> Any:
        if not failed:
            task = asyncio.current_task()
            assert task is not None
            failed.append(task)
            raise RuntimeError("a bug in the reader")
        reading.set()
        return await follow(**kw)

    monkeypatch.setattr(audit, "follow_requests", following)
    caplog.set_level(logging.WARNING, logger="bot.api.watch")
    status, made = await jobs.ask()
    assert status == 201, made
    first = asyncio.create_task(jobs.get(made["status_url"] + "?wait=1"))
    deadline = time.monotonic() + 10
    while not (failed and failed[0].done()):
        assert time.monotonic() < deadline, "the reader did not read"
        await asyncio.sleep(0.01)
    [record] = [r for r in caplog.records if r.name == "bot.api.watch"]
    assert record.levelno == logging.ERROR and record.exc_info is not None
    assert "request watch" in record.getMessage()
    assert str(record.exc_info[1]) == "a bug in the reader"
    assert (await first)[1]["status"] == "pending"  # woken only when its wait was over

    second = asyncio.create_task(jobs.get(made["status_url"] + "?wait=60"))
    await asyncio.wait_for(reading.wait(), 10)
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    status, decided = await asyncio.wait_for(second, 10)  # woken by a new reader
    assert status == 200 and decided["status"] == "approved"
