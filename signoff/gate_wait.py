"""How ``signoff gate`` waits for its request's decision: a long-poll renewed each minute,
patient with an unreachable Signoff until past the expiry, and a withdrawal once stopped."""

from __future__ import annotations

import asyncio
import contextlib

from bot.api.schemas import RequestView

from .client import Client, RequestRefused, SignoffError
from .gate_cli import REFUSED, UNREACHABLE, WITHDRAWN
from .gate_say import Progress, say

_RENEW = 60.0
"""Seconds between renewals of the gate's long-poll, so votes, reminders and escalations
show within a minute (a decision shows at once)."""


async def wait(client: Client, view: RequestView, stop: asyncio.Event) -> RequestView | int:
    """The decided request; once ``stop`` is set (SIGINT/SIGTERM) the request withdrawn;
    else the exit status: Signoff refused to answer (the token was revoked meanwhile), or
    stayed unreachable past the request's expiry."""
    waiting = asyncio.create_task(_decision(client, view))
    stopping = asyncio.create_task(stop.wait())
    await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    if not waiting.done():
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        return await withdraw(client, view) or UNREACHABLE
    if stop.is_set():  # stopped as the answer came: a stopped gate never runs its command
        return await withdraw(client, view) or UNREACHABLE
    try:
        view = waiting.result()
    except RequestRefused as exc:
        say(f"signoff gate: {exc}")
        return REFUSED
    except SignoffError as exc:
        say(f"signoff gate: {exc}")
        return UNREACHABLE
    return view if view.final else await _give_up(client, view)


SETTLE = 5.0
"""Seconds a gate stopped while a call to Signoff is under way (its request being made,
its start being told) waits for the answer, to know what to undo or say."""

GRACE = 600.0
"""Seconds past a request's expiry (or its held approval's end) that a gate waits for a
Signoff it cannot reach before it gives up (exit 13)."""


async def _decision(client: Client, view: RequestView) -> RequestView:
    """The request once decided, or as it stands 10 minutes past its expiry (the gate
    stops waiting for a Signoff that stays away). An approval held in its undo window
    past that is waited out: it is the answer unless undone."""
    shown = Progress(view)
    while True:
        until = view.held_until or view.expires_at
        left = None if until is None else until.timestamp() - client.server_time()
        patience = None if left is None else max(left, 0) + GRACE
        view = await client.wait(
            view.id, within=patience, on_update=shown.update, renew_every=_RENEW
        )
        if view.final or view.held_until is None:
            return view


async def _give_up(client: Client, view: RequestView) -> RequestView:
    """A request still undecided ``GRACE`` past its expiry (nothing expired it: no
    Signoff process runs its scheduler): withdrawn, so its card cannot be approved for a
    gate no longer waiting; a decision that landed first stands, and is the answer."""
    say(
        f"signoff gate: still {view.status} {GRACE / 60:.0f} minutes past its expiry (is a "
        "Signoff process running its scheduler?); withdrawing the request"
    )
    reason = "its gate stopped waiting: nobody decided, and it was not expired in time"
    try:
        return await client.withdraw(view.id, reason=reason)
    except RequestRefused as exc:
        if exc.view is not None:
            return exc.view
        say(f"signoff gate: the withdrawal was refused, and the request stays: {exc}")
    except SignoffError as exc:
        say(f"signoff gate: could not withdraw it, and the request stays: {exc}")
    return view


async def withdraw(client: Client, view: RequestView) -> RequestView | int | None:
    """The request withdrawn, or decided before the withdrawal landed: a denial or an
    expiry stands; an approval does not run the command of a gate told to stop."""
    say("signoff gate: stopped while waiting; withdrawing the request")
    try:
        return await client.withdraw(view.id, reason="the waiting job was stopped")
    except RequestRefused as exc:
        if exc.view is None:
            say(f"signoff gate: the withdrawal was refused, and the request stays: {exc}")
            return REFUSED
        if exc.view.approved:
            say(
                f"signoff gate: it was {exc.view.status} before the withdrawal landed, but "
                "this gate was stopped: the command was not run"
            )
            await report_not_run(client, exc.view, "its gate was stopped before it ran it")
            return WITHDRAWN
        return exc.view
    except SignoffError as exc:
        say(f"signoff gate: could not withdraw it: {exc}")
        return None


async def report_not_run(client: Client, view: RequestView, why: str) -> None:
    """Tell the card's thread, which reads ``view``'s decision, that the command did not
    run, and ``why``."""
    try:
        await client.report_not_run(view.id, f"{why}, so the command did not run.")
    except SignoffError as exc:
        say(f"signoff gate: the card's thread was not told: {exc}")
