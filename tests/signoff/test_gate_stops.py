"""When ``signoff gate`` stops waiting, and what a stopped gate does: an approval held in
its undo window is waited out past the request's expiry, and a gate told to stop never
runs its command, even when an approval landed just before its withdrawal."""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_gate_progress import _view

from bot.api.schemas import NewRequest, RequestView
from signoff import gate, gate_ask, gate_run, gate_say, gate_used, gate_wait
from signoff.client import Client, RequestRefused
from signoff.gate_cli import CHECK_FAILED, REFUSED, WITHDRAWN


def _told_not_run(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the gate tells its card's thread of a command it did not run, as it tells it."""
    told: list[str] = []

    async def report_not_run(self: Client, request_id: str, why: str) -> RequestView:
        told.append(why)
        return _view(status="approved")

    monkeypatch.setattr(Client, "report_not_run", report_not_run)
    return told


async def test_an_approval_held_past_the_expiry_and_its_grace_is_waited_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = datetime.now(UTC)
    held = _view(
        expires_at=now - timedelta(seconds=1),  # past, and past its grace below
        held_by="U0ALICE",
        held_until=now + timedelta(seconds=0.3),
    )
    approved = _view(status="approved", decided_by="U0ALICE", decided_at=now)
    monkeypatch.setattr(gate_wait, "GRACE", 0.1)
    asked = 0

    async def get(self: Client, request_id: str, *, wait: float | None = None) -> RequestView:
        nonlocal asked
        asked += 1
        await asyncio.sleep(min(wait or 0, 0.05))  # the long-poll, short
        return approved if asked > 20 else held  # final once the window has passed

    monkeypatch.setattr(Client, "get", get)
    answer = await gate_wait._decision(Client("http://127.0.0.1:9", "token"), held)
    assert answer.status == "approved"
    assert gate_say.verdict(answer) is None  # the command runs


async def test_a_gate_stopped_as_it_was_approved_does_not_run_its_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pending = _view()
    approved = _view(status="approved", decided_by="U0ALICE")
    waiting = asyncio.Event()

    async def create(self: Client, request: NewRequest, **_: Any) -> RequestView:
        return pending

    async def wait(self: Client, request_id: str, **_: Any) -> RequestView:
        waiting.set()
        await asyncio.Event().wait()  # no answer before the stop
        raise AssertionError

    async def withdraw(self: Client, request_id: str, **_: Any) -> RequestView:
        raise RequestRefused(409, "already decided", view=approved)  # the approval won

    told = _told_not_run(monkeypatch)

    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(Client, "wait", wait)
    monkeypatch.setattr(Client, "withdraw", withdraw)
    ran = tmp_path / "ran"
    gating = asyncio.create_task(
        gate._gate(
            Client("http://127.0.0.1:9", "token"),
            NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
            ["touch", str(ran)],
        )
    )
    await asyncio.wait_for(waiting.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    assert not ran.exists()
    assert "approved before the withdrawal landed" in capsys.readouterr().err
    assert told == ["its gate was stopped before it ran it, so the command did not run."]


@pytest.mark.parametrize("answered", [True, False])
async def test_a_gate_stopped_while_it_tells_signoff_the_command_starts_does_not_run_it(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    answered: bool,
) -> None:
    """Stopped (a CI step's time up) while an unreachable Signoff is asked again to take its
    start: it runs nothing and exits 12, saying so; when the start lands after all, this
    gate holds the approval, so its card's thread is told the command did not run."""
    approved = _view(status="approved", decided_by="U0ALICE")
    starting, answer, stopped = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def decided(self: Client, *_: Any, **__: Any) -> RequestView:
        return approved

    async def start(self: Client, request_id: str, attempt: str, **_: Any) -> RequestView:
        starting.set()
        await answer.wait()  # Signoff out of reach, asked again, until it answers
        return approved

    def stopping(*args: Any) -> Any:
        stopped.set()
        return settle(*args)

    told = _told_not_run(monkeypatch)
    monkeypatch.setattr(Client, "create", decided)
    monkeypatch.setattr(Client, "wait", decided)
    monkeypatch.setattr(Client, "start", start)
    settle = gate_used._stopped_while_starting
    monkeypatch.setattr(gate_used, "_stopped_while_starting", stopping)
    monkeypatch.setattr(gate_used, "SETTLE", 10 if answered else 0.05)
    ran = tmp_path / "ran"
    gating = asyncio.create_task(
        gate._gate(
            Client("http://127.0.0.1:9", "token"),
            NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
            ["touch", str(ran)],
        )
    )
    await asyncio.wait_for(starting.wait(), 10)
    # Deaf to its signals now, the gate would die of this one, saying nothing.
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    os.kill(os.getpid(), signal.SIGTERM)
    if answered:  # the start lands once the stop was seen
        await asyncio.wait_for(stopped.wait(), 10)
        answer.set()
    assert await asyncio.wait_for(gating, 10) == WITHDRAWN
    assert not ran.exists()
    assert "the command was not run" in capsys.readouterr().err
    not_run = ["its gate was stopped before it ran it, so the command did not run."]
    assert told == (not_run if answered else [])


async def test_a_refused_withdrawal_is_said_and_exits_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Signoff answered the withdrawal (the token was revoked meanwhile): not "could not
    reach Signoff", and the gate says the request stays."""
    waiting = asyncio.Event()

    async def create(self: Client, request: NewRequest, **_: Any) -> RequestView:
        return _view()

    async def wait(self: Client, request_id: str, **_: Any) -> RequestView:
        waiting.set()
        await asyncio.Event().wait()
        raise AssertionError

    async def withdraw(self: Client, request_id: str, **_: Any) -> RequestView:
        raise RequestRefused(401, "the API token is not one of this Signoff's")

    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(Client, "wait", wait)
    monkeypatch.setattr(Client, "withdraw", withdraw)
    gating = asyncio.create_task(
        gate._gate(
            Client("http://127.0.0.1:9", "token"),
            NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
            [],
        )
    )
    await asyncio.wait_for(waiting.wait(), 10)
    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(gating, 10) == REFUSED
    said = capsys.readouterr().err
    assert "the withdrawal was refused, and the request stays" in said, said


async def test_the_check_never_sees_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its output is shown on the card."""
    monkeypatch.setenv("SIGNOFF_TOKEN", "sgn_secret-token-of-the-job")
    shown = await gate_ask._check("printenv SIGNOFF_TOKEN || echo none")
    assert shown == "none\n"


async def test_a_check_failing_first_says_nothing_was_asked_and_why_it_failed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A silent failing check gets no dangling colon; a noisy one its last stderr line."""
    client = Client("http://127.0.0.1:9", "sgn_unused")  # never reached: nothing is asked
    request = NewRequest(title="t", channel="C0OPS", anyone_in_channel=True)
    assert await gate_ask.ask(client, request, "exit 3", asyncio.Event()) == CHECK_FAILED
    assert capsys.readouterr().err == (
        "signoff gate: --check exited with 3 (it printed nothing on stderr)\n"
        "signoff gate: nothing was asked; the command was not run\n"
    )
    assert await gate_ask._check("echo first >&2; echo no such volume >&2; exit 1") is None
    assert capsys.readouterr().err == "signoff gate: --check exited with 1: no such volume\n"


async def test_a_check_failing_once_approved_says_the_command_was_not_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The card reads approved: the gate's own lines, and the card's thread, say the
    command never ran."""
    approved = _view(status="approved", decided_by="U0ALICE", decided_at=datetime.now(UTC))

    async def create(self: Client, request: NewRequest) -> RequestView:
        return _view(acts_on=request.acts_on)

    async def decided(*args: Any, **kwargs: Any) -> RequestView:
        return approved

    told = _told_not_run(monkeypatch)
    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(gate_ask, "wait", decided)
    monkeypatch.setattr(gate_ask, "say_waiting", lambda *args, **kwargs: None)
    marker = tmp_path / "checked"
    check = f"test -e {marker} && exit 4; touch {marker}; echo vol-1"
    client = Client("http://127.0.0.1:9", "sgn_unused")
    request = NewRequest(title="t", channel="C0OPS", anyone_in_channel=True)
    assert await gate_ask.ask(client, request, check, asyncio.Event()) == CHECK_FAILED
    assert capsys.readouterr().err.splitlines()[-2:] == [
        "signoff gate: --check exited with 4 (it printed nothing on stderr)",
        "signoff gate: it was approved, but --check failed: the command was not run",
    ]
    why = "its --check failed once it was decided, so the command did not run."
    assert told == [why]


async def test_a_command_printing_a_line_longer_than_a_read_buffer_runs_to_its_end(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A JSON blob on one line (or a progress bar redrawn with carriage returns) is
    passed through whole, and the gate reports the command's status, not a traceback."""
    script = "import sys; sys.stdout.write('x' * 200_000 + '\\nlast line\\n')"
    status, tail = await gate_run.run([sys.executable, "-c", script], dict(os.environ))
    assert status == 0
    assert tail[-2:] == ["x" * 1500, "last line"]  # the end of it, as the summary keeps
    assert capfd.readouterr().out == "x" * 200_000 + "\nlast line\n"


async def test_the_summary_keeps_the_last_characters_of_a_long_line_not_its_last_bytes(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """Text outside ASCII takes several bytes a character: the card's summary shows the
    line's last 1500 characters, none of them half a character read as garbage."""
    line = "€" * 2000 + "é"
    script = f"import sys; sys.stdout.write({line!r} + '\\n')"
    status, tail = await gate_run.run([sys.executable, "-c", script], dict(os.environ))
    assert status == 0
    assert tail == [line[-1500:]]
    assert capfd.readouterr().out == line + "\n"


async def test_a_gate_stopped_in_the_same_moment_its_approval_arrives_does_not_run_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """SIGTERM handled while the long-poll's approving answer is being read: both are done
    when the gate looks, and a stopped gate never runs its command."""
    approved = _view(status="approved", decided_by="U0ALICE")
    handlers: dict[int, Any] = {}
    loop = asyncio.get_running_loop()
    add_handler = loop.add_signal_handler

    def capture(sig: int, callback: Any, *args: Any) -> None:
        handlers[sig] = callback
        add_handler(sig, callback, *args)

    async def create(self: Client, request: NewRequest, **_: Any) -> RequestView:
        return _view()

    async def wait(self: Client, request_id: str, **_: Any) -> RequestView:
        handlers[signal.SIGTERM]()  # the stop lands as the answer is read
        return approved

    async def withdraw(self: Client, request_id: str, **_: Any) -> RequestView:
        raise RequestRefused(409, "already decided", view=approved)

    told = _told_not_run(monkeypatch)
    monkeypatch.setattr(loop, "add_signal_handler", capture)
    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(Client, "wait", wait)
    monkeypatch.setattr(Client, "withdraw", withdraw)
    ran = tmp_path / "ran"
    code = await gate._gate(
        Client("http://127.0.0.1:9", "token"),
        NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
        ["touch", str(ran)],
    )
    assert code == WITHDRAWN and not ran.exists()
    assert "approved before the withdrawal landed" in capsys.readouterr().err
    assert told == ["its gate was stopped before it ran it, so the command did not run."]


async def test_a_gate_stopped_while_it_reports_exits_with_the_commands_own_status(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The command ran and failed (3); Signoff is unreachable as the gate reports it, and
    a CI step's time runs out (SIGTERM): the gate exits 3, the command's own, not 143."""
    approved = _view(status="approved", decided_by="U0ALICE")
    handlers: dict[int, Any] = {}
    loop = asyncio.get_running_loop()
    add_handler = loop.add_signal_handler

    def capture(sig: int, callback: Any, *args: Any) -> None:
        handlers[sig] = functools.partial(callback, *args)
        add_handler(sig, callback, *args)

    async def create(self: Client, request: NewRequest, **_: Any) -> RequestView:
        return _view()

    async def wait(self: Client, request_id: str, **_: Any) -> RequestView:
        return approved

    async def start(self: Client, request_id: str, attempt: str) -> RequestView:
        return approved.model_copy(update={"started_at": datetime.now(UTC)})

    async def report_outcome(self: Client, request_id: str, **_: Any) -> RequestView:
        handlers[signal.SIGTERM]()  # stopped while Signoff is asked again, and again
        await asyncio.Event().wait()
        raise AssertionError("never answered")

    monkeypatch.setattr(loop, "add_signal_handler", capture)
    monkeypatch.setattr(Client, "create", create)
    monkeypatch.setattr(Client, "wait", wait)
    monkeypatch.setattr(Client, "start", start)
    monkeypatch.setattr(Client, "report_outcome", report_outcome)
    code = await asyncio.wait_for(
        gate._gate(
            Client("http://127.0.0.1:9", "token"),
            NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
            ["sh", "-c", "exit 3"],
        ),
        10,
    )
    assert code == 3
    assert "stopped while it reported how the command went" in capsys.readouterr().err


async def test_a_command_whose_output_nobody_reads_any_more_runs_to_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``signoff gate ... | head -1``: the reader goes away while the command writes. The
    approved command is not cut short, the gate raises nothing, and the command's status
    and last lines are kept for its report."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone
    with os.fdopen(write, "w", encoding="utf-8") as gone:
        monkeypatch.setattr(sys, "stdout", gone)
        script = "for n in range(2000): print('line', n, 'x' * 100)"
        status, tail = await gate_run.run([sys.executable, "-c", script], dict(os.environ))
    assert status == 0 and tail[-1] == "line 1999 " + "x" * 100


@pytest.mark.parametrize("decided_first", [False, True])
async def test_a_request_nothing_expired_is_withdrawn_when_its_gate_stops_waiting(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    decided_first: bool,
) -> None:
    """Still pending past its expiry and the gate's grace (no Signoff process ran its
    scheduler to expire it): the gate withdraws it, so nobody can approve its card for a
    job no longer waiting, and runs nothing; an approval that landed first is the answer."""
    pending = _view(expires_at=datetime.now(UTC) - timedelta(seconds=1))
    approved = _view(status="approved", decided_by="U0ALICE")
    withdrawals: list[str] = []

    async def create(self: Client, *_: Any, **__: Any) -> RequestView:
        return pending

    async def get(self: Client, request_id: str, *, wait: float | None = None) -> RequestView:
        await asyncio.sleep(min(wait or 0, 0.01))  # the long-poll, short
        return pending

    async def withdraw(self: Client, request_id: str, *, reason: str = "") -> RequestView:
        withdrawals.append(reason)
        if decided_first:
            raise RequestRefused(409, "it was decided already", view=approved)
        return _view(status="withdrawn", reason=reason)

    async def start(self: Client, *_: Any, **__: Any) -> RequestView:
        return approved

    async def report_outcome(self: Client, *_: Any, **__: Any) -> RequestView:
        return approved

    for name, fake in (("create", create), ("get", get), ("withdraw", withdraw)):
        monkeypatch.setattr(Client, name, fake)
    monkeypatch.setattr(Client, "start", start)
    monkeypatch.setattr(Client, "report_outcome", report_outcome)
    monkeypatch.setattr(gate_wait, "GRACE", 0.1)
    ran = tmp_path / "ran"
    status = await asyncio.wait_for(
        gate._gate(
            Client("http://127.0.0.1:9", "token"),
            NewRequest(title="Clear", channel="C0OPS", approvers=["U0ALICE"]),
            ["touch", str(ran)],
        ),
        10,
    )
    said = capsys.readouterr().err
    assert "past its expiry (is a Signoff process running its scheduler?)" in said
    assert withdrawals == [
        "its gate stopped waiting: nobody decided, and it was not expired in time"
    ]
    assert (status, ran.exists()) == ((0, True) if decided_first else (WITHDRAWN, False))
