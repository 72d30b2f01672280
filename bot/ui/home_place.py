"""Where each of App Home's two lists starts: what its page buttons carry, and what
storage keeps for the viewer so a redraw shows the pages they were on."""

from __future__ import annotations

from dataclasses import dataclass

from storage.queries import is_cursor


@dataclass(frozen=True, kw_only=True)
class HomePlace:
    """A storage cursor per list (the requests that name the viewer, those open to their
    channels), or None for its first page."""

    named: str | None = None
    open_to_channels: str | None = None

    @property
    def value(self) -> str:
        """The place as printable text ("" for both first pages), read back by ``parse``."""
        if self == FIRST_PAGES:
            return ""
        return f"{self.named or ''}|{self.open_to_channels or ''}".replace("\0", " ")

    @classmethod
    def parse(cls, value: str) -> HomePlace:
        """The place ``value`` names; a part that is not a cursor (tampered with, damaged)
        starts its list from the first page. Each only places the reader's own list."""
        parts = [part.replace(" ", "\0") for part in value.split("|")]
        if len(parts) != 2:
            return FIRST_PAGES
        named, open_to_channels = (part if is_cursor(part) else None for part in parts)
        return cls(named=named, open_to_channels=open_to_channels)


FIRST_PAGES = HomePlace()
