"""``signoff gate`` when Signoff cannot be reached, over real HTTP: it keeps trying for a
while, then exits 13 (documented) without running its command."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import socket
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from test_gate_progress import _view

from bot.api.request_records import REQUESTS_PATH
from bot.api.schemas import NewRequest
from signoff import gate, gate_wait
from signoff.client import Client
from signoff.gate_cli import EXIT_CODES, UNREACHABLE, WITHDRAWN

ASK = NewRequest(title="Delete 42 stale volumes", channel="C0OPS", approvers=["U0ALICE"])


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
async def away() -> AsyncIterator[str]:
    """A Signoff that takes the request, then answers 503 (its Redis is away) to every
    question about it; the request expires a moment later."""
    expires = datetime.now(UTC) + timedelta(seconds=0.3)
    pending = _view(expires_at=expires).model_dump_json()

    async def created(_: web.Request) -> web.Response:
        return web.Response(status=201, text=pending, content_type="application/json")

    async def down(_: web.Request) -> web.Response:
        return web.json_response({"error": "Redis is not reachable"}, status=503)

    app = web.Application()
    app.router.add_post(REQUESTS_PATH, created)
    app.router.add_get(REQUESTS_PATH + "/{id}", down)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    yield f"http://127.0.0.1:{server.port}"
    await server.close()


async def test_a_signoff_never_reached_exits_13_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(Client, "create", functools.partialmethod(Client.create, retry_for=0.3))
    ran = tmp_path / "ran"
    url = f"http://127.0.0.1:{_closed_port()}"
    code = await gate._gate(Client(url, "sgn_" + "x" * 30), ASK, ["touch", str(ran)])
    assert code == UNREACHABLE == 13 and not ran.exists()
    assert f"cannot reach Signoff at {url}" in capsys.readouterr().err
    assert "could not reach Signoff" in EXIT_CODES[13]


async def test_a_signoff_lost_while_waiting_exits_13_past_the_expiry_and_its_grace(
    away: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.setattr(gate_wait, "GRACE", 0.5)
    ran = tmp_path / "ran"
    started = time.monotonic()
    code = await gate._gate(Client(away, "sgn_" + "x" * 30), ASK, ["touch", str(ran)])
    assert code == UNREACHABLE and not ran.exists()
    assert time.monotonic() - started >= 0.5  # it kept trying through the grace
    err = capsys.readouterr().err
    assert "waiting for approval" in err, err
    assert (
        err.splitlines()[-1]
        == f"signoff gate: cannot reach Signoff at {away}: 503: Redis is not reachable"
    )


async def test_a_gate_stopped_before_signoff_was_reached_stops_at_once_asking_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """No call got through, so no request exists to withdraw: it stops trying to make one
    at once, rather than for seconds more only to withdraw what it made."""
    attempts, refused = [], asyncio.Event()
    once = Client._once

    async def counted(self: Client, *args: Any, **kwargs: Any) -> Any:
        attempts.append(args[0])
        try:
            return await once(self, *args, **kwargs)
        finally:
            refused.set()

    monkeypatch.setattr(Client, "_once", counted)
    ran = tmp_path / "ran"
    url = f"http://127.0.0.1:{_closed_port()}"
    client = Client(url, "sgn_" + "x" * 30)
    retried = ASK.model_copy(update={"idempotency_key": "cleanup-2026-11-27"})
    gating = asyncio.create_task(gate._gate(client, retried, ["touch", str(ran)]))
    await asyncio.wait_for(refused.wait(), 10)
    assert not gating.done()  # it is trying again
    os.kill(os.getpid(), signal.SIGTERM)
    tried = len(attempts)
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    assert len(attempts) == tried and not client.sent and not ran.exists()
    err = capsys.readouterr().err
    assert "the command was not run (nothing was asked: Signoff was not reached)" in err, err


async def test_an_https_address_of_a_plain_http_signoff_says_to_use_http(
    away: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A likely slip in SIGNOFF_URL: not only the TLS library's words for it."""
    ran = tmp_path / "ran"
    tls = away.replace("http://", "https://")
    code = await gate._gate(Client(tls, "sgn_" + "x" * 30), ASK, ["touch", str(ran)])
    assert code == UNREACHABLE and not ran.exists()
    assert "is its address http://, not https://?" in capsys.readouterr().err


async def test_an_approval_signoff_cannot_be_told_is_started_exits_13_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Approved, but its Redis goes away before the gate can say it starts the command: an
    untold run would be recorded nowhere, and run again by a retry, so it does not run."""
    approved = _view(status="approved", decided_by="U0ALICE").model_dump_json()

    async def answered(_: web.Request) -> web.Response:
        return web.Response(status=201, text=approved, content_type="application/json")

    async def down(_: web.Request) -> web.Response:
        return web.json_response({"error": "Redis is not reachable"}, status=503)

    app = web.Application()
    app.router.add_post(REQUESTS_PATH, answered)
    app.router.add_get(REQUESTS_PATH + "/{id}", answered)
    app.router.add_post(REQUESTS_PATH + "/{id}/start", down)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    monkeypatch.setattr(Client, "start", functools.partialmethod(Client.start, retry_for=0.3))
    ran = tmp_path / "ran"
    try:
        url = f"http://127.0.0.1:{server.port}"
        code = await gate._gate(Client(url, "sgn_" + "x" * 30), ASK, ["touch", str(ran)])
    finally:
        await server.close()
    assert code == UNREACHABLE and not ran.exists()
    err = capsys.readouterr().err
    assert "Signoff could not be told the command starts" in err, err
    assert "so it was not run; run the gate again with the same --idempotency-key" in err
