"""The demo's page draws every emoji code Signoff's cards and notes use."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_emoji_signoff_writes_is_one_the_page_draws() -> None:
    written = {
        code
        for source in (ROOT / "bot").rglob("*.py")
        for code in re.findall(r":([a-z]+(?:_[a-z0-9]+)*):", source.read_text())
    }
    page = (ROOT / "sandbox" / "static" / "mrkdwn.js").read_text()
    table = page[page.index("const EMOJI = {") : page.index("};", page.index("const EMOJI"))]
    drawn = set(re.findall(r"([a-z0-9_]+): \"", table))
    assert written and written <= drawn, sorted(written - drawn)
