"""``signoff gate``: a shell or cron job asks in Slack and runs its command only if approved.

    signoff gate --channel C0123OPS --approvers S0ONCALL --min-approvals 2 --expires 8h \\
      --title "Delete 42 stale volumes" --details-file plan.txt -- ./cleanup.sh --apply

It talks to a Signoff server (``SIGNOFF_URL``, ``SIGNOFF_TOKEN``), waits without polling
Slack, runs the command when approved with the decision in its environment, streams its
output, and reports how it went to the card's thread. Run again under the same
idempotency key, it runs the command once per approval. Ctrl-C or SIGTERM while waiting
withdraws the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from typing import NoReturn
from urllib.parse import urlsplit

from bot.api.schemas import NewRequest

from .client import Client, SignoffError
from .gate_ask import ask
from .gate_cli import (
    APPROVED_NO_COMMAND,
    FOLLOWED,
    REFUSED,
    USAGE,
    parse_args,
    request_of,
    usage_of,
)
from .gate_run import SUMMARY_CHARS, environment, run
from .gate_say import json_line, say, verdict
from .gate_used import ASK_AFRESH, take, used


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
    try:
        where = urlsplit(url)  # an unclosed IPv6 bracket raises
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
    if command and shutil.which(command[0]) is None:
        # Asked first, approvers would approve a command that cannot run.
        on_path = "" if os.sep in command[0] else " on PATH"
        _usage(f"cannot run {command[0]}: no such executable{on_path}; nothing was asked")
    try:
        client = Client(url, token)
    except ValueError as exc:
        _usage(f"{'SIGNOFF_URL' if '@' in where.netloc else 'SIGNOFF_TOKEN'}: {exc}")
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
        for _ in range(FOLLOWED):
            try:
                answer = await ask(client, request, check, stop)
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.remove_signal_handler(sig)
            if isinstance(answer, int):
                return answer
            code = verdict(answer)
            if code is not None or not command:
                if as_json:
                    print(json_line(answer), flush=True)
                return APPROVED_NO_COMMAND if code is None else code
            taken: int | str | None = used(answer)
            if taken is None:
                taken = await take(client, answer)
            if not isinstance(taken, str):
                break
            # Asked again meanwhile (another gate on this key saw its check change): the
            # key now leads to the request asking again, to be waited on and checked.
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, stop.set)
        else:
            # A retry on this key starts again from its first request, as each round here
            # did; a new key asks afresh.
            say(
                f"signoff gate: its approval was asked again {FOLLOWED} times before the "
                "command could start (other gates on its --idempotency-key saw what they "
                "check change); the command was not run"
            )
            say(ASK_AFRESH)
            return REFUSED
        if as_json:
            print(json_line(answer), flush=True)
        if isinstance(taken, int):
            return taken
        started = time.monotonic()
        status, tail = await run(command, environment(answer))
        duration = time.monotonic() - started
        summary = "\n".join(tail)[-SUMMARY_CHARS:]
        await _report(client, answer.id, status=status, duration=duration, summary=summary)
        return status


async def _report(
    client: Client, request_id: str, *, status: int, duration: float, summary: str
) -> None:
    """Tell Signoff how the command went. Stopped meanwhile (Ctrl-C, or SIGTERM: a CI step's
    time up while an unreachable Signoff is asked again), the gate gives the report up, so
    it still exits with the command's own status."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    reporting = asyncio.create_task(
        client.report_outcome(
            request_id, exit_status=status, duration_seconds=duration, summary=summary
        )
    )
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({reporting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    if not reporting.done():
        reporting.cancel()
        with contextlib.suppress(asyncio.CancelledError, SignoffError):
            await reporting
        say("signoff gate: stopped while it reported how the command went: not reported")
        return
    try:
        reporting.result()
    except SignoffError as exc:
        say(f"signoff gate: the outcome was not reported: {exc}")


def _usage(message: str) -> NoReturn:
    print(f"signoff gate: {message}", file=sys.stderr)
    raise SystemExit(USAGE)
