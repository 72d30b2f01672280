"""Where a run talks in Slack, kept with its stored interrupts so a resume finds it again."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage.records import InterruptRecord


@dataclass(frozen=True, kw_only=True)
class Place:
    """Where a run talks: the channel and thread of its messages, who asked for it, and
    where they asked (``channel`` when None)."""

    channel: str | None
    thread_ts: str | None
    requested_by: str
    asked_in: str | None = None

    @property
    def requester_channel(self) -> str | None:
        return self.asked_in or self.channel


def place_of(record: InterruptRecord) -> Place:
    """Where the run of ``record`` talks: the thread of its card (its run's, once in one)."""
    return Place(
        channel=record.channel,
        thread_ts=record.thread_ts or record.message_ts,
        requested_by=record.requested_by,
        asked_in=record.asked_in,
    )


def first_posted(records: Sequence[InterruptRecord]) -> InterruptRecord:
    """Of one round's records, the one whose card was posted first: its thread is where the
    run goes on talking (a round's records come back in id order, not in the cards' order).
    Records whose card was never posted come last."""
    return min(records, key=lambda r: (r.message_ts is None, _ts_order(r.message_ts)))


def _ts_order(ts: str | None) -> tuple[int, ...]:
    """A Slack message ts (``1700000001.000100``) as numbers, so later ones sort after."""
    try:
        return tuple(int(part) for part in (ts or "").split("."))
    except ValueError:
        return ()
