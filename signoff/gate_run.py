"""Running the approved command of ``signoff gate``: its environment carries the decision,
its output passes through, and its last lines are kept for the card's thread."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import deque

from bot.api.schemas import APPROVED_STATUSES, RequestView
from storage.requests import ParamValue

from .gate_say import say

_SUMMARY_LINES = 15
SUMMARY_CHARS = 1500
"""The end of the command's output reported to the card's thread, at most."""
_SUMMARY_BYTES = 4 * SUMMARY_CHARS
"""The end of an output line kept for the summary: its last characters, in UTF-8 at most."""


def environment(view: RequestView) -> dict[str, str]:
    """The command's environment: ours plus the decision (params as approved, a reply)."""
    env = without_token()
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


def without_token() -> dict[str, str]:
    """Our environment without ``SIGNOFF_TOKEN``: the command and the check never see it
    (a check's output is shown on the card)."""
    env = dict(os.environ)
    env.pop("SIGNOFF_TOKEN", None)
    return env


async def run(command: list[str], env: dict[str, str]) -> tuple[int, list[str]]:
    """Run ``command``, passing its output through; its exit status and last lines."""
    try:
        child = await asyncio.create_subprocess_exec(
            *command,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
    except OSError as exc:
        say(f"signoff gate: cannot run {command[0]}: {exc.strerror}")
        return 127, [f"cannot run {command[0]}: {exc.strerror}"]
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, child.send_signal, sig)
    tail: deque[str] = deque(maxlen=_SUMMARY_LINES)
    assert child.stdout is not None
    passing, partial = True, b""
    # Read as it comes, not by lines: a line longer than a read buffer is passed on whole.
    while chunk := await child.stdout.read(65536):
        if passing:
            passing = _pass_on(chunk)
        *lines, partial = (partial + chunk).split(b"\n")
        partial = partial[-_SUMMARY_BYTES:]
        tail.extend(_line_end(line) for line in lines)
    if partial:
        tail.append(_line_end(partial))
    status = await child.wait()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.remove_signal_handler(sig)
    return (128 - status if status < 0 else status), list(tail)


def _pass_on(chunk: bytes) -> bool:
    """Write ``chunk`` of the command's output to ours; False once nobody reads ours (``|
    head``): an approved command is not cut short for it, and its output goes nowhere."""
    try:
        sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
    except BrokenPipeError:
        # Ours now leads nowhere, so writing or flushing it later (at exit) fails no more.
        nowhere = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nowhere, sys.stdout.fileno())
        os.close(nowhere)
        return False
    return True


def _line_end(line: bytes) -> str:
    """The last characters of an output line, for the summary: cut as characters, not
    bytes, so no character is left half (and shown as garbage)."""
    return line[-_SUMMARY_BYTES:].decode(errors="replace")[-SUMMARY_CHARS:].rstrip()


def _text(value: ParamValue) -> str:
    return json.dumps(value) if isinstance(value, bool) else str(value)
