"""One approval, one run: before ``signoff gate`` runs an approved command it tells Signoff
it starts it, and a gate re-attached under the same idempotency key to an approval an
earlier gate used says how that one went instead of running the command again."""

from __future__ import annotations

import asyncio
import signal
import uuid
from datetime import datetime

from bot.api.schemas import RequestView

from .client import Client, RequestRefused, SignoffError
from .gate_cli import REFUSED, UNREACHABLE, USED, WITHDRAWN
from .gate_say import say
from .gate_wait import SETTLE, report_not_run

ASK_AFRESH = "signoff gate: to ask for a new approval, give a new --idempotency-key"


async def take(client: Client, view: RequestView) -> int | str | None:
    """None once Signoff took this gate's start of the approved command; the id of the
    request that asked again for the approval meanwhile (its approval is the one to run
    under); else the exit status, said why: an earlier gate used the approval (``used``),
    or Signoff could not be told, so the command did not run (it would run unrecorded,
    and again on a retry), or the gate was stopped meanwhile (Ctrl-C, or SIGTERM: a CI
    step's time up while an unreachable Signoff is asked again), so it runs nothing."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        starting = asyncio.create_task(_start(client, view))
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not stop.is_set():
            return starting.result()
        return await _stopped_while_starting(client, view, starting)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _stopped_while_starting(
    client: Client, view: RequestView, starting: asyncio.Task[int | str | None]
) -> int:
    """A gate stopped while it told Signoff it starts the command: the start's answer, if
    it comes within ``SETTLE`` s, says whether this gate took the approval, and so whether
    the card's thread is told the command did not run (an approval another gate took is
    not this gate's to tell of)."""
    try:
        taken = await asyncio.wait_for(starting, SETTLE)
    except TimeoutError:
        say(
            "signoff gate: stopped before Signoff answered that the command starts; the "
            "command was not run"
        )
        return WITHDRAWN
    if isinstance(taken, int):  # not this gate's to run: said why
        return taken
    say("signoff gate: stopped as the command was to start; the command was not run")
    if taken is None:  # this gate took the approval: its thread hears it was not used
        await report_not_run(client, view, "its gate was stopped before it ran it")
    return WITHDRAWN


async def _start(client: Client, view: RequestView) -> int | str | None:
    """``take``'s call to Signoff, as ``take`` answers it."""
    try:
        await client.start(view.id, uuid.uuid4().hex)
    except RequestRefused as exc:
        if exc.view is not None and exc.view.superseded_by is not None:
            return exc.view.superseded_by
        code = used(exc.view) if exc.view is not None else None
        if code is not None:
            return code
        say(f"signoff gate: {exc}; the command was not run")
        return REFUSED
    except SignoffError as exc:
        say(
            f"signoff gate: Signoff could not be told the command starts ({exc}), so it "
            "was not run; run the gate again with the same --idempotency-key to run it"
        )
        return UNREACHABLE
    return None


def used(view: RequestView) -> int | None:
    """None while nobody started the approved command of ``view``; else, said how an
    earlier gate used the approval, the exit status: the command's own when it reported
    one (a retried step ends as the run did), else ``USED``."""
    outcome, card = view.outcome, view.permalink or view.status_url
    if outcome is not None and outcome.exit_status is not None:
        when = _at(view.started_at) if view.started_at else f"ending {_at(outcome.reported_at)}"
        how = "succeeded" if outcome.exit_status == 0 else f"failed (exit {outcome.exit_status})"
        took = f" in {outcome.duration_seconds:.1f} s" if outcome.duration_seconds else ""
        say(
            f"signoff gate: the command already ran under this approval, at {when}: it "
            f"{how}{took}; not run again: {card}"
        )
        say(f"signoff gate: exiting {outcome.exit_status % 256}, as that run did")
        say(ASK_AFRESH)
        return outcome.exit_status % 256
    if outcome is not None:
        say(
            f"signoff gate: an earlier gate did not run the command under this approval "
            f"(at {_at(outcome.reported_at)}: {outcome.not_run}); not run now: {card}"
        )
    elif view.started_at is not None:
        say(
            f"signoff gate: an earlier gate started the command at {_at(view.started_at)} and "
            f"did not report how it ended (it may still run, or it was killed); not run "
            f"again: {card}"
        )
    else:
        return None
    say(ASK_AFRESH)
    return USED


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")
