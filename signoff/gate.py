"""``signoff gate``: a shell or cron job asks in Slack and runs its command only if approved.

    signoff gate --channel C0123OPS --approvers S0ONCALL --min-approvals 2 --expires 8h \\
      --title "Delete 42 stale volumes" --details-file plan.txt -- ./cleanup.sh --apply

It talks to a Signoff server (``SIGNOFF_URL``, ``SIGNOFF_TOKEN``), waits without polling
Slack, runs the command when approved with the decision in its environment, streams its
output, and reports how it went to the card's thread. Ctrl-C or SIGTERM while waiting
withdraws the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
import uuid
from collections import deque
from collections.abc import Sequence
from typing import NoReturn, TypeVar
from urllib.parse import urlsplit

from bot.api.schemas import APPROVED_STATUSES, NewRequest, RequestView
from storage.requests import ParamValue

from .client import Client, RequestRefused, SignoffError
from .gate_cli import (
    APPROVED_NO_COMMAND,
    CHECK_FAILED,
    DENIED,
    EXPIRED,
    REFUSED,
    UNREACHABLE,
    USAGE,
    WITHDRAWN,
    as_typed,
    parse_args,
    request_of,
    usage_of,
)

T = TypeVar("T")

_SUMMARY_LINES = 15
_SUMMARY_CHARS = 1500
"""The end of the command's output reported to the card's thread, at most."""
_SUMMARY_BYTES = 4 * _SUMMARY_CHARS
"""The end of an output line kept for the summary: its last characters, in UTF-8 at most."""
_RENEW = 60.0
"""Seconds between renewals of the gate's long-poll, so votes, reminders and escalations
show within a minute (a decision shows at once)."""
_ASK_AGAIN = 5
"""How many approvals a changing --check output gets asked for before the gate gives up."""
_CHECK_TIMEOUT = 300.0
_SETTLE = 5.0
"""Seconds a gate stopped while its request was being made waits for it, to withdraw it."""


def main(argv: Sequence[str] | None = None) -> int:
    """``signoff gate ...``: the exit status as documented in ``EXIT_CODES``."""
    args, command = parse_args(list(sys.argv[1:] if argv is None else argv))
    url, token = os.environ.get("SIGNOFF_URL"), os.environ.get("SIGNOFF_TOKEN")
    missing = [
        text
        for value, text in (
            (url, "SIGNOFF_URL (the Signoff server)"),
            (token, "SIGNOFF_TOKEN (signoff token create)"),
        )
        if not value
    ]
    if not url or not token:
        _usage(f"set {' and '.join(missing)}")
    where = urlsplit(url)
    try:
        where.port  # noqa: B018  # a port out of range or not a number raises
    except ValueError as exc:
        _usage(f"SIGNOFF_URL: {exc}")
    if where.scheme not in ("http", "https") or not where.hostname:
        _usage(
            "SIGNOFF_URL: use the server's http:// or https:// address, e.g. https://signoff.example.com"
        )
    try:
        request = request_of(args)
    except ValueError as exc:  # pydantic's ValidationError too
        _usage(usage_of(exc))
    try:
        client = Client(url, token)
    except ValueError as exc:
        _usage(f"SIGNOFF_TOKEN: {exc}")
    gate = _gate(client, request, command, check=args.check, as_json=args.json)
    # The client's notes (retrying an unreachable server) read like the gate's own lines.
    notes = logging.getLogger("signoff")
    if not notes.handlers:
        said = logging.StreamHandler()
        said.setFormatter(logging.Formatter("signoff gate: %(message)s"))
        notes.addHandler(said)
        notes.setLevel(logging.INFO)
    try:
        return asyncio.run(gate)
    except KeyboardInterrupt:
        return 130


async def _gate(
    client: Client,
    request: NewRequest,
    command: list[str],
    *,
    check: str | None = None,
    as_json: bool = False,
) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with client:
        try:
            answer = await _ask(client, request, check, stop)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
        if isinstance(answer, int):
            return answer
        if as_json:
            print(answer.model_dump_json(), flush=True)
        code = _verdict(answer)
        if code is not None or not command:
            return APPROVED_NO_COMMAND if code is None else code
        started = time.monotonic()
        status, tail = await _run(command, _environment(answer))
        duration = time.monotonic() - started
        summary = "\n".join(tail)[-_SUMMARY_CHARS:]
        try:
            await client.report_outcome(
                answer.id, exit_status=status, duration_seconds=duration, summary=summary
            )
        except SignoffError as exc:
            _say(f"signoff gate: the outcome was not reported: {exc}")
        return status


async def _ask(
    client: Client, request: NewRequest, check: str | None, stop: asyncio.Event
) -> RequestView | int:
    """The decided request, or the exit status saying why there is none. With ``check``,
    its output is shown on the card and read again once approved: when it changed, the
    approval is for something else, so the command does not run and the approvers are
    asked again, shown what changed (at most ``_ASK_AGAIN`` approvals in all)."""
    shown = await _checked(check, stop) if check else None
    if stop.is_set():
        _say("signoff gate: stopped before asking; the command was not run")
        return WITHDRAWN
    if check and shown is None:
        return CHECK_FAILED
    request = request.model_copy(update={"acts_on": shown})
    for _ in range(_ASK_AGAIN):
        creating = asyncio.create_task(client.create(request))
        try:
            view = await _unless_stopped(creating, stop)
        except RequestRefused as exc:
            _say(f"signoff gate: {_refusal(exc, request)}")
            return USAGE if exc.status == 400 else REFUSED
        except SignoffError as exc:
            _say(f"signoff gate: {exc}")
            return UNREACHABLE
        if view is None:
            return await _stopped_while_asking(client, creating)
        if view.acts_on is not None:
            shown = view.acts_on  # a retry's card may show an earlier output than ours
        if not view.final:
            _say_waiting(view, now=client.server_time())
        answer = await _wait(client, view, stop)
        if isinstance(answer, int) or not check or not answer.approved:
            return answer
        now = await _checked(check, stop)
        if stop.is_set():
            _say(
                f"signoff gate: it was {answer.status}, but this gate was stopped while "
                "checking again: the command was not run"
            )
            return WITHDRAWN
        if now is None:
            return CHECK_FAILED
        if now == shown:
            return answer
        _say("signoff gate: what the command acts on changed since it was approved; asking again")
        shown = now
        request = request.model_copy(
            update={
                "acts_on": now,
                "supersedes": answer.id,
                "idempotency_key": f"gate-{uuid.uuid4().hex}",
            }
        )
    _say(f"signoff gate: the check's output changed {_ASK_AGAIN} times after approval; giving up")
    return CHECK_FAILED


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
    within ``_SETTLE`` s, withdrawn (its card must not stay live for a job that is gone)."""
    try:
        view = await asyncio.wait_for(creating, _SETTLE)
    except (TimeoutError, SignoffError):
        _say(
            "signoff gate: stopped before Signoff answered; the command was not run (if the "
            "request was made, it waits in Slack until it expires)"
        )
        return WITHDRAWN
    return await _withdraw(client, view) or UNREACHABLE


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
            env=_without_token(),
            start_new_session=True,  # killed with whatever it started, when the gate stops
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except OSError as exc:
        _say(f"signoff gate: --check could not run: {exc}")
        return None
    try:
        out, err = await asyncio.wait_for(child.communicate(), _CHECK_TIMEOUT)
    except TimeoutError:
        _say(f"signoff gate: --check did not finish in {_CHECK_TIMEOUT:.0f} s")
        return None
    finally:
        if child.returncode is None:  # timed out, or the gate was stopped
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            await child.wait()
    if child.returncode != 0:
        last = err.decode(errors="replace").strip().splitlines()[-1:] or [""]
        _say(f"signoff gate: --check exited with {child.returncode}: {last[0]}")
        return None
    return out.decode(errors="replace")


async def _wait(client: Client, view: RequestView, stop: asyncio.Event) -> RequestView | int:
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
        return await _withdraw(client, view) or UNREACHABLE
    if stop.is_set():  # stopped as the answer came: a stopped gate never runs its command
        return await _withdraw(client, view) or UNREACHABLE
    try:
        return waiting.result()
    except RequestRefused as exc:
        _say(f"signoff gate: {exc}")
        return REFUSED
    except SignoffError as exc:
        _say(f"signoff gate: {exc}")
        return UNREACHABLE


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


async def _withdraw(client: Client, view: RequestView) -> RequestView | int | None:
    """The request withdrawn, or decided before the withdrawal landed: a denial or an
    expiry stands; an approval does not run the command of a gate told to stop."""
    _say("signoff gate: stopped while waiting; withdrawing the request")
    try:
        return await client.withdraw(view.id, reason="the waiting job was stopped")
    except RequestRefused as exc:
        if exc.view is None:
            _say(f"signoff gate: the withdrawal was refused, and the request stays: {exc}")
            return REFUSED
        if exc.view.approved:
            _say(
                f"signoff gate: it was {exc.view.status} before the withdrawal landed, but "
                "this gate was stopped: the command was not run"
            )
            return WITHDRAWN
        return exc.view
    except SignoffError as exc:
        _say(f"signoff gate: could not withdraw it: {exc}")
        return None


def _verdict(view: RequestView) -> int | None:
    """None when the command may run, else the exit status saying why not."""
    if view.approved:
        # A quorum's approvers all, as the card names them; else who made it final.
        deciders = view.approvals if len(view.approvals) > 1 else [view.decided_by]
        who = ", ".join(_person(view, user) for user in deciders if user)
        _say(f"signoff gate: {view.status} by {who or 'default: nobody decided in time'}")
        return None
    reason = f": {view.reason}" if view.reason else ""
    _say(f"signoff gate: {view.status}{reason}")
    codes = {"denied": DENIED, "expired": EXPIRED, "pending": EXPIRED, "withdrawn": WITHDRAWN}
    return codes.get(view.status, DENIED)


def _environment(view: RequestView) -> dict[str, str]:
    """The command's environment: ours plus the decision (params as approved, a reply)."""
    env = _without_token()
    env["SIGNOFF_REQUEST_ID"] = view.id
    env["SIGNOFF_DECIDED_BY"] = view.decided_by or ""
    for name, value in view.params.items():
        env[f"SIGNOFF_PARAM_{name.upper()}"] = _text(value)
    if view.reply is not None:
        env["SIGNOFF_REPLY"] = view.reply
    if view.items:
        approved = [i.item for i in view.items if i.status in APPROVED_STATUSES]
        env["SIGNOFF_APPROVED_ITEMS"] = "\n".join(approved)
        env["SIGNOFF_EXCLUDED_ITEMS"] = "\n".join(
            i.item for i in view.items if i.item not in approved
        )
    return env


def _without_token() -> dict[str, str]:
    """Our environment without ``SIGNOFF_TOKEN``: the command and the check never see it
    (a check's output is shown on the card)."""
    env = dict(os.environ)
    env.pop("SIGNOFF_TOKEN", None)
    return env


async def _run(command: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Run ``command``, passing its output through; its exit status and last lines."""
    try:
        child = await asyncio.create_subprocess_exec(
            *command,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    except OSError as exc:
        _say(f"signoff gate: cannot run {command[0]}: {exc.strerror}")
        return 127, [f"cannot run {command[0]}: {exc.strerror}"]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, child.send_signal, sig)
    tail: deque[str] = deque(maxlen=_SUMMARY_LINES)
    assert child.stdout is not None
    out, partial = sys.stdout.buffer, b""
    # Read as it comes, not by lines: a line longer than a read buffer is passed on whole.
    while chunk := await child.stdout.read(65536):
        out.write(chunk)
        out.flush()
        *lines, partial = (partial + chunk).split(b"\n")
        partial = partial[-_SUMMARY_BYTES:]
        tail.extend(_line_end(line) for line in lines)
    if partial:
        tail.append(_line_end(partial))
    status = await child.wait()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)
    return (128 - status if status < 0 else status), list(tail)


def _line_end(line: bytes) -> str:
    """The last characters of an output line, for the summary: cut as characters, not
    bytes, so no character is left half (and shown as garbage)."""
    return line[-_SUMMARY_BYTES:].decode(errors="replace")[-_SUMMARY_CHARS:].rstrip()


class Progress:
    """One line on stderr for each change while the gate waits."""

    def __init__(self, view: RequestView) -> None:
        self._last = view

    def update(self, view: RequestView) -> None:
        before, self._last = self._last, view
        if view.reminders_sent > before.reminders_sent:
            _say(f"signoff gate: reminder {view.reminders_sent} sent to the approvers")
        if view.escalated and not before.escalated:
            _say("signoff gate: not decided in time; escalated")
        if len(view.approvals) > len(before.approvals):
            _say(f"signoff gate: {len(view.approvals)} of {view.min_approvals} approvals")
        if view.held_until is not None and view.held_until != before.held_until:
            when = view.held_until.isoformat()
            who = _person(view, view.held_by or "?")
            _say(f"signoff gate: decided by {who}; final at {when} unless undone")
        if before.held_until is not None and view.held_until is None and not view.final:
            _say("signoff gate: the decision was undone; waiting for a decision again")


def _say_waiting(view: RequestView, *, now: float) -> None:
    """Where the request waits, for whom, and until when (``now`` by the server's clock)."""
    who = ", ".join(_person(view, user) for user in view.approvers) or "anyone in the channel"
    many = f"{view.min_approvals} of " if view.min_approvals > 1 else ""
    if view.permalink:
        _say(f"signoff gate: request {view.id} waiting for approval: {view.permalink}")
    else:
        answered = f" (Slack answered {view.not_posted})" if view.not_posted else ""
        hint = ""
        if view.not_posted in ("not_in_channel", "channel_not_found"):
            hint = f" (is the app a member of {view.channel}?)"
        _say(
            f"signoff gate: request {view.id} waiting for approval; its card is not in "
            f"Slack yet{answered}, and Signoff keeps trying{hint}"
        )
    _say(f"signoff gate: who may decide: {many}{who}")
    if view.expires_at is not None:
        left = max(0, int(view.expires_at.timestamp() - now))
        _say(f"signoff gate: expires in {_span(left)} ({view.expires_at.isoformat()})")


def _person(view: RequestView, user_id: str) -> str:
    """``alice (U0ALICE)`` where Slack told the name, else the id as it is."""
    name = view.names.get(user_id)
    return f"{name} ({user_id})" if name else user_id


def _refusal(exc: RequestRefused, request: NewRequest) -> str:
    """Why Signoff refused ``request``; a 400 (bad input) told by the options that set the
    field it names, with the item sent when one of a list's (``approvers.0``) was wrong."""
    if exc.status != 400:
        return exc.message
    if exc.field is None:
        return as_typed(None, exc.message)
    name, _, index = exc.field.partition(".")
    sent = None
    with contextlib.suppress(TypeError, ValueError, IndexError):
        sent = getattr(request, name, ())[int(index)]
    return as_typed(exc.field, exc.message.removeprefix(f"{exc.field}: "), sent)


def _usage(message: str) -> NoReturn:
    print(f"signoff gate: {message}", file=sys.stderr)
    raise SystemExit(USAGE)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _text(value: ParamValue) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _span(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"
