"""The shapes of the ids storage keys on (run, thread, interrupt record), checked before
any key is built, and how an error quotes an id a caller sent."""

from __future__ import annotations

import re

from .errors import InvalidIdError

_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")


def check_id(kind: str, value: object) -> str:
    """``value`` if it is a well-formed id, else InvalidIdError naming what was wrong."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InvalidIdError(
            f"malformed {kind} id {quoted_id(value)}: use 1-128 letters, digits or _ . : -"
        )
    return value


_THREAD = re.compile(r"[A-Za-z0-9_.:\-]{1,128}(/[A-Za-z0-9_.:\-]{1,128})*")


def check_thread_id(value: object) -> str:
    """A session's thread id: an id, or ids joined by ``/`` (a workflow's agent node runs on
    ``<workflow thread>/<node id>``); else InvalidIdError."""
    if not isinstance(value, str) or len(value) > 512 or not _THREAD.fullmatch(value):
        raise InvalidIdError(
            f"malformed thread id {quoted_id(value)}: use 1-128 letters, digits or _ . : - "
            "(ids joined by / for a workflow's agent node, 512 in all)"
        )
    return value


def record_id(run_id: str, interrupt_id: str) -> str:
    """The storage id of a run's interrupt: ``<run_id>/<interrupt_id>``.

    Runtime interrupt ids repeat across runs of one workflow, so the run id makes the
    record id unique, and carries the run so a decision needs no lookup round trip.
    """
    return f"{check_id('run', run_id)}/{check_id('interrupt', interrupt_id)}"


def split_record_id(value: object) -> tuple[str, str]:
    """``(run_id, interrupt_id)`` of a record id; InvalidIdError when malformed."""
    if not isinstance(value, str) or value.count("/") != 1:
        raise InvalidIdError(
            f"malformed interrupt record id {quoted_id(value)}: expected 'run/interrupt'"
        )
    run_id, interrupt_id = value.split("/")
    return check_id("run", run_id), check_id("interrupt", interrupt_id)


def is_record_id(value: str) -> bool:
    """Whether ``value`` is a well-formed record id (``split_record_id`` takes it)."""
    try:
        split_record_id(value)
    except InvalidIdError:
        return False
    return True


SHOWN = 40
"""How many characters of a caller's id an error shows."""


def quoted_id(value: object) -> str:
    """``value`` quoted (``repr``) for an error message, at most ``SHOWN`` characters of it."""
    if isinstance(value, str):
        return repr(value[:SHOWN])
    return repr(value)[:SHOWN]
