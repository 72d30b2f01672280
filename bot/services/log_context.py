"""The ids that tie a story together in the logs: which request, run, channel and user
the work at hand is about. Set where work starts (a click, a resume job, a scheduled
step); every log record made meanwhile, in this task or the tasks it starts, carries them."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

_IDS: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar("signoff_log_ids")
FIELDS = ("record_id", "run_id", "channel", "user", "slack_request")
"""The ids a log record may carry, in the order JSON lines show them."""


@contextlib.contextmanager
def log_ids(**ids: str | None) -> Iterator[None]:
    """Tag the log records made inside the block (and in tasks started there) with
    ``ids``, on top of those already set; empty ones are left out."""
    given = {name: value for name, value in ids.items() if value and name in FIELDS}
    token = _IDS.set({**_IDS.get({}), **given})
    try:
        yield
    finally:
        _IDS.reset(token)


def current_ids() -> dict[str, str]:
    """The ids set for the work at hand."""
    return dict(_IDS.get({}))
