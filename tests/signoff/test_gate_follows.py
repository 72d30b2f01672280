"""A gate whose approval is asked again before its command could start (another gate on
its idempotency key saw what it checks change) follows to the request asking again; one
asked again and again gives up, saying so, and runs nothing."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from test_gate_progress import _view

from bot.api.schemas import NewRequest, RequestView
from signoff import gate
from signoff.client import Client, RequestRefused
from signoff.gate_cli import EXIT_CODES, FOLLOWED, REFUSED


async def test_a_gate_asked_again_time_after_time_gives_up_and_runs_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ids = (f"req_{n:032x}" for n in itertools.count(1))
    asked: list[str] = []

    async def create(self: Client, request: NewRequest, **_: Any) -> RequestView:
        asked.append(next(ids))
        return _view(id=asked[-1])

    async def wait(self: Client, request_id: str, **_: Any) -> RequestView:
        return _view(id=request_id, status="approved", decided_by="U0ALICE")

    async def start(self: Client, request_id: str, attempt: str) -> None:
        again = _view(id=request_id, status="approved", superseded_by=f"req_{'f' * 32}")
        raise RequestRefused(409, "its approval was asked again", view=again)

    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(Client, "wait", wait)
    monkeypatch.setattr(Client, "start", start)
    ran = tmp_path / "ran"
    request = NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"])
    code = await gate._gate(Client("http://127.0.0.1:9", "token"), request, ["touch", str(ran)])
    assert code == REFUSED
    assert len(asked) == FOLLOWED
    assert not ran.exists()
    said = capsys.readouterr().err
    assert f"its approval was asked again {FOLLOWED} times before the command could start" in said
    assert "the command was not run" in said and "give a new --idempotency-key" in said
    assert f"asked again {FOLLOWED} times" in EXIT_CODES[REFUSED]
