"""Real processes: the bot that took the click is gone before it is decided.

`signoff serve --no-workers` acknowledges the click (queued in Redis's click stream),
then is killed; two `signoff worker` processes started afterwards decide the click and
resume the run, each exactly once.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from pathlib import Path
from urllib.parse import urlsplit

import aiohttp
import redis.asyncio
from procs import (
    ALICE,
    BOB,
    GENERAL,
    WORKERS_RUNNING,
    exit_status,
    free_port,
    signoff_env,
    start_signoff,
    until_healthy,
    until_logged,
)

from bot.ui import ids
from sandbox import Sandbox

LEAKED = "xoxb-sent-in-a-query-string"


async def test_a_new_worker_process_resumes_a_click_taken_by_a_killed_bot(
    sandbox: Sandbox, redis_url: str, tmp_path: Path
) -> None:
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    redis_url = await _with_password(redis_url)
    env = signoff_env(sandbox, redis_url, marks, port)
    server = start_signoff("serve", "--no-workers", env=env, log=log)
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", server, log)
        # A token sent in a query string by mistake is not written to the access log.
        await until_healthy(f"http://127.0.0.1:{port}/healthz?token={LEAKED}", server, log)
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"

        ack = await sandbox.interactions.slash_command(
            ALICE, channel=GENERAL, command="/signoff", text="run cleanup now"
        )
        assert ack.status == "acked", ack
        ws = sandbox.workspace
        request = await sandbox.wait_for(
            lambda: next((m for m in ws.history(GENERAL) if ids.APPROVE in str(m.blocks)), None),
            within=15,
        )
        ack = await sandbox.interactions.click(
            BOB, channel=GENERAL, message_ts=request.ts, action_id=ids.APPROVE
        )
        assert ack.status == "acked", ack
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()
    # Acknowledged, but neither decided nor resumed: the killed bot only queued it.
    assert "Approved" not in str(ws.message(GENERAL, request.ts).blocks)
    assert not marks.exists()

    at_default_priority = {k: v for k, v in env.items() if k != "SIGNOFF_WORKER_NICE"}
    ports = [free_port(), free_port()]
    workers = [
        start_signoff("worker", "--port", str(p), env=at_default_priority, log=log) for p in ports
    ]
    try:
        await until_logged(log, WORKERS_RUNNING, times=2)
        for worker, worker_port in zip(workers, ports, strict=True):
            await until_healthy(f"http://127.0.0.1:{worker_port}/readyz", worker, log)
        # Workers yield the CPU to the acks of a serve process on the same host.
        expected = 19  # the lowest priority, whatever this process runs at
        assert [os.getpriority(os.PRIO_PROCESS, w.pid) for w in workers] == [expected] * 2
        finished = await sandbox.wait_for(
            lambda: next(
                (m for m in ws.replies(GENERAL, request.ts) if m.text.startswith("Finished")),
                None,
            ),
            within=30,
        )
        # Each worker counts what it did: the one decision, in whichever decided it.
        pages = [await _metrics(worker_port) for worker_port in ports]
        approved = 'signoff_decisions_total{outcome="approved"} 1'
        assert sum(approved in page.splitlines() for page in pages) == 1, pages
        assert all("signoff_background_loops_failing 0" in page for page in pages)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        for worker in workers:
            assert await exit_status(worker) == 0, log.read_text()
    assert finished.text == f"Finished: done: deleted 2 file(s)\ncc <@{ALICE}>"
    assert "Approved" in str(ws.message(GENERAL, request.ts).blocks)
    assert ws.ephemerals(BOB, GENERAL) == []  # decided once: no "already decided" note
    [line] = marks.read_text().splitlines()  # the tool ran exactly once, in a worker
    pid, attempt, _key, *paths = line.split()
    assert int(pid) in {w.pid for w in workers} and paths == ["/tmp/a", "/tmp/b"]
    assert attempt == "1"
    logged = log.read_text()
    assert sandbox.bot_token not in logged and sandbox.signing_secret not in logged
    assert LEAKED not in logged
    assert _password(redis_url) not in logged
    # Not a terminal: one JSON object per line, each with its level and event.
    lines = [json.loads(line) for line in logged.splitlines()]
    assert all({"at", "level", "pid", "logger", "event"} <= set(line) for line in lines)
    events = [line["event"] for line in lines]
    assert any("chat.postMessage" in e for e in events)  # the debug log has the Web API calls
    assert any('"GET /healthz" 200' in e for e in events)
    assert not any("will be ignored" in e for e in events)  # the bot token is used
    # The lines about this request carry its ids, whichever process wrote them.
    record_id = next(line["record_id"] for line in lines if "record_id" in line)
    tagged = [line for line in lines if line.get("record_id") == record_id]
    assert {line.get("user") for line in tagged} >= {BOB}
    assert any(line.get("slack_request") for line in tagged)  # the click's trigger id
    run_id = record_id.split("/")[0]
    assert any(line.get("run_id") == run_id for line in lines)  # the resume worker's lines
    # The decider's line, in another process than the click's, names the click and the run.
    [decided] = [line for line in tagged if line["event"].startswith("decision on")]
    assert decided["slack_request"] and decided["run_id"] == run_id, decided
    # One filter finds the story in both processes: the click's in the killed bot, the
    # decision and the resume in a worker.
    told = {line["pid"] for line in tagged}
    assert server.pid in told and told & {w.pid for w in workers}, told


async def _with_password(url: str) -> str:
    """``url`` naming a user with a password, which no log line may show: the cluster's
    carries one; on the single server a user is added."""
    if urlsplit(url).password:
        return url
    parts = urlsplit(url)
    password = "redis-pw-" + secrets.token_hex(12)
    client = redis.asyncio.Redis.from_url(url)
    try:
        await client.acl_setuser(
            "signoff",
            enabled=True,
            passwords=[f"+{password}"],
            keys=["*"],
            channels=["*"],
            commands=["+@all"],
        )
    finally:
        await client.aclose()
    return parts._replace(netloc=f"signoff:{password}@{parts.netloc}").geturl()


def _password(url: str) -> str:
    password = urlsplit(url).password
    assert password
    return password


async def _metrics(port: int) -> str:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{port}/metrics") as r:
        assert r.status == 200
        return await r.text()


async def test_a_policy_asking_in_a_dm_asks_its_approvers_in_a_group_dm(
    sandbox: Sandbox, redis_url: str, tmp_path: Path
) -> None:
    """A policy that asks in a direct message, of two approvers: the card goes to their
    group DM, where the one who did not ask approves it."""
    marks, log, port = tmp_path / "marks", tmp_path / "bot.log", free_port()
    env = signoff_env(sandbox, redis_url, marks, port)
    server = start_signoff("serve", env=env, log=log)
    try:
        await until_healthy(f"http://127.0.0.1:{port}/healthz", server, log)
        sandbox.request_url = f"http://127.0.0.1:{port}/slack/events"
        await sandbox.interactions.slash_command(
            ALICE, channel=GENERAL, command="/signoff", text="run cleanup-dm now"
        )
        ws = sandbox.workspace

        def card() -> tuple[str, str] | None:
            for channel in ws.channels.values():
                for message in ws.history(channel.id) if channel.is_mpim else ():
                    if ids.APPROVE in str(message.blocks):
                        return channel.id, message.ts
            return None

        dm, ts = await sandbox.wait_for(card, within=15)
        assert ws.channels[dm].members == {ALICE, BOB, ws.app.bot_user_id}
        await sandbox.interactions.click(BOB, channel=dm, message_ts=ts, action_id=ids.APPROVE)
        finished = await sandbox.wait_for(
            lambda: next((m for m in ws.replies(dm, ts) if m.text.startswith("Finished")), None),
            within=30,
        )
    finally:
        server.send_signal(signal.SIGTERM)  # it finishes what it does with the sandbox first
        assert await asyncio.to_thread(server.wait, 15) == 0, log.read_text()
    assert finished.text.startswith("Finished: done: deleted 2 file(s)")
    assert len(marks.read_text().splitlines()) == 1
