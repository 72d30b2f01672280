"""Where a run talks in Slack, kept with its stored interrupts so a resume finds it again."""

from __future__ import annotations

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
    """Where the run of ``record`` talks: the thread of its first message."""
    return Place(
        channel=record.channel,
        thread_ts=record.thread_ts or record.message_ts,
        requested_by=record.requested_by,
        asked_in=record.asked_in,
    )
