"""How ``signoff gate`` asks: the request made (with its ``--check`` output on the card),
waited on, and asked again when what the command acts on changed since it was approved."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from typing import TypeVar

from bot.api.schemas import NewRequest, RequestView

from .client import Client, RequestRefused, SignoffError
from .gate_cli import CHECK_FAILED, REFUSED, UNREACHABLE, USAGE, WITHDRAWN
from .gate_run import without_token
from .gate_say import refusal, say, say_waiting
from .gate_wait import SETTLE, report_not_run, wait, withdraw

T = TypeVar("T")

_ASK_AGAIN = 5
"""How many approvals a changing --check output gets asked for before the gate gives up."""
_CHECK_TIMEOUT = 300.0


async def ask(
    client: Client, request: NewRequest, check: str | None, stop: asyncio.Event
) -> RequestView | int:
    """The decided request, or the exit status saying why there is none. With ``check``,
    its output is shown on the card and read again once approved: when it changed, the
    approval is for something else, so the command does not run and the approvers are
    asked again, shown what changed (at most ``_ASK_AGAIN`` approvals in all)."""
    shown = await _checked(check, stop) if check else None
    if stop.is_set():
        say("signoff gate: stopped before asking; the command was not run")
        return WITHDRAWN
    if check and shown is None:
        say("signoff gate: nothing was asked; the command was not run")
        return CHECK_FAILED
    request = request.model_copy(update={"acts_on": shown})
    for _ in range(_ASK_AGAIN):
        creating = asyncio.create_task(_made(client, request))
        try:
            view = await _unless_stopped(creating, stop)
        except RequestRefused as exc:
            say(f"signoff gate: {refusal(exc, request)}")
            return USAGE if exc.status == 400 else REFUSED
        except SignoffError as exc:
            say(f"signoff gate: {exc}")
            return UNREACHABLE
        if view is None:
            return await _stopped_while_asking(client, creating)
        if view.acts_on is not None:
            shown = view.acts_on  # a retry's card may show an earlier output than ours
        if view.final and not view.approved:  # only a reused key finds a decided request
            say(
                f"signoff gate: --idempotency-key {request.idempotency_key} is request "
                f"{view.id}, {view.status} earlier; give a new key to ask again"
            )
        if not view.final:
            say_waiting(view, now=client.server_time())
        answer = await wait(client, view, stop)
        if isinstance(answer, int) or not check or not answer.approved:
            return answer
        if answer.started_at is not None or answer.outcome is not None:
            return answer  # used by an earlier gate: what its command acts on is not read
        now = await _checked(check, stop)
        if stop.is_set():
            say(
                f"signoff gate: it was {answer.status}, but this gate was stopped while "
                "checking again: the command was not run"
            )
            await report_not_run(client, answer, "its gate was stopped while checking again")
            return WITHDRAWN
        if now is None:
            say(
                f"signoff gate: it was {answer.status}, but --check failed: the command was not run"
            )
            await report_not_run(client, answer, "its --check failed once it was decided")
            return CHECK_FAILED
        if now == shown:
            return answer
        since = "answered" if answer.status == "responded" else "approved"
        say(f"signoff gate: what the command acts on changed since it was {since}; asking again")
        shown = now
        request = request.model_copy(
            update={
                "acts_on": now,
                "supersedes": answer.id,
                "idempotency_key": f"gate-{uuid.uuid4().hex}",
            }
        )
    say(f"signoff gate: the check's output changed {_ASK_AGAIN} times after approval; giving up")
    return CHECK_FAILED


async def _made(client: Client, request: NewRequest) -> RequestView:
    """The request made (or re-attached to by its key). One superseded since (what the
    command acts on changed after it was approved) is followed to the request that asks
    again for it: its approval can never start the command, that one's can."""
    view = await client.create(request)
    for _ in range(_ASK_AGAIN):
        if view.superseded_by is None:
            break
        say(
            f"signoff gate: request {view.id} was asked again as {view.superseded_by} "
            "(what the command acts on changed since it was approved); following it"
        )
        view = await client.get(view.superseded_by)
    return view


async def _unless_stopped(asking: asyncio.Task[T], stop: asyncio.Event) -> T | None:
    """What ``asking`` answers, or None once ``stop`` is set first (Ctrl-C while Signoff
    is being retried): a gate is never deaf to its signals. ``asking`` is left running."""
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({asking, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    return asking.result() if asking.done() else None


async def _stopped_while_asking(
    client: Client, creating: asyncio.Task[RequestView]
) -> RequestView | int:
    """A gate stopped while its request was being made: the request, if Signoff answers
    within ``SETTLE`` s, withdrawn (its card must not stay live for a job that is gone).
    While no call has reached Signoff there is nothing to withdraw, so it stops at once."""
    if not client.sent:
        creating.cancel()
        with contextlib.suppress(asyncio.CancelledError, SignoffError):
            await creating
        say(
            "signoff gate: stopped before Signoff answered; the command was not run (nothing "
            "was asked: Signoff was not reached)"
        )
        return WITHDRAWN
    try:
        view = await asyncio.wait_for(creating, SETTLE)
    except (TimeoutError, SignoffError):
        say(
            "signoff gate: stopped before Signoff answered; the command was not run (if the "
            "request was made, it waits in Slack until it expires)"
        )
        return WITHDRAWN
    return await withdraw(client, view) or UNREACHABLE


async def _checked(check: str, stop: asyncio.Event) -> str | None:
    """The output of the ``--check`` shell command, or None when it fails (said why) or
    ``stop`` comes first (the check is killed)."""
    checking = asyncio.create_task(_check(check))
    output = await _unless_stopped(checking, stop)
    if not checking.done():
        checking.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await checking
    return output


async def _check(check: str) -> str | None:
    """The output of the ``--check`` shell command, or None when it fails (said why)."""
    try:
        child = await asyncio.create_subprocess_shell(
            check,
            env=without_token(),
            start_new_session=True,  # killed with whatever it started, when the gate stops
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        say(f"signoff gate: --check could not run: {exc}")
        return None
    try:
        out, err = await asyncio.wait_for(child.communicate(), _CHECK_TIMEOUT)
    except TimeoutError:
        say(f"signoff gate: --check did not finish in {_CHECK_TIMEOUT:.0f} s")
        return None
    finally:
        if child.returncode is None:  # timed out, or the gate was stopped
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            await child.wait()
    if child.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:]
        said = f": {last[0]}" if last else " (it printed nothing on stderr)"
        say(f"signoff gate: --check exited with {child.returncode}{said}")
        return None
    return out.decode(errors="replace")
