"""Untrusted text made safe for Slack mrkdwn, and cut to Block Kit limits without breaking it.

mrkdwn has three control characters (``&``, ``<``, ``>``); escaping them disarms every
mention and link form. Escape first, truncate after, and never cut inside an entity.
"""

from __future__ import annotations

import re

ELLIPSIS = "…"
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_LONGEST_ENTITY = max(len(e) for e in _ENTITIES.values())
_FENCE = "```"


def escape(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` replaced by their entities, and bidirectional
    controls shown (``visible_bidi``), nothing else."""
    return visible_bidi(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_REFERENCE = re.compile(r"<([@#][A-Z0-9]+|https?://[^|>]+)(?:\|[^>]*)?>")


def as_typed(text: str) -> str:
    """Text Slack sent a person's words in (a mention or a command), as they typed it: a
    user, channel or link reference without Slack's label (``<@U1|ann>`` as ``<@U1>``,
    ``<https://x|x>`` as ``https://x``), and the entities as their characters."""
    plain = _REFERENCE.sub(lambda m: m[1] if m[1].startswith("http") else f"<{m[1]}>", text)
    return plain.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def truncate(text: str, limit: int, *, ellipsis: str = ELLIPSIS) -> str:
    """``text`` cut to at most ``limit`` characters, ending in ``ellipsis`` when cut.

    ``text`` must already be escaped: a cut that would split ``&amp;``, ``&lt;`` or ``&gt;``
    moves before the ``&`` so no half entity is left behind.
    """
    if limit < len(ellipsis):
        raise ValueError(f"limit {limit} is shorter than the ellipsis {ellipsis!r}")
    if len(text) <= limit:
        return text
    cut = limit - len(ellipsis)
    amp = text.rfind("&", max(0, cut - _LONGEST_ENTITY + 1), cut)
    if amp != -1:
        end = text.find(";", amp)
        if end == -1 or end >= cut:
            cut = amp
    return text[:cut] + ellipsis


def escape_truncate(text: str, limit: int) -> str:
    """Untrusted ``text`` escaped for mrkdwn and cut to ``limit`` characters."""
    return truncate(escape(text), limit)


def plain(text: str, limit: int) -> str:
    """Untrusted ``text`` for a ``plain_text`` object: not escaped but for bidirectional
    controls, shown (``visible_bidi``), and cut to ``limit``."""
    text = visible_bidi(text)
    if len(text) <= limit:
        return text
    return text[: limit - len(ELLIPSIS)] + ELLIPSIS


_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible_bidi(text: str) -> str:
    """``text`` with each bidirectional control shown as its ``\\uXXXX`` escape (JSON's
    own, so JSON stays the same value): obeyed, one reverses what follows it on screen,
    and ``/srv/<RLO>hs.mr`` would read as ``/srv/rm.sh``."""
    return _BIDI.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def code_text(text: str) -> str:
    """Untrusted ``text`` escaped for use inside a code block.

    A fence inside the text (or one made with the block's own fences) would close the
    block early, so a zero-width space follows every backtick that another follows, and
    keeps one at either end from joining a fence. Bidirectional controls are shown, not
    obeyed (``visible_bidi``): the block shows exactly what runs.
    """
    return fence_safe(re.sub("`(?=`)", "`\u200b", escape(text)))


def fence_safe(piece: str) -> str:
    """A piece of ``code_text`` (the whole, or one of its cuts), kept from joining a code
    block's own fences: a zero-width space before a leading and after a trailing backtick."""
    if piece.startswith("`"):
        piece = "\u200b" + piece
    if piece.endswith("`"):
        piece += "\u200b"
    return piece


_GRAVE = "\u02cb"
"""Modifier letter grave accent: what a backtick is shown as inside an inline code span."""


def code_span(text: str, limit: int) -> str:
    """Untrusted ``text`` (a tool's or request's name) as an inline code span of at most
    ``limit`` characters between its backticks. A backtick would end the span (what
    follows it read as mrkdwn), so each is shown as U+02CB; bidirectional controls are
    shown, not obeyed, as in a code block."""
    return f"`{truncate(escape(text).replace('`', _GRAVE), limit)}`"


def code_block(text: str, limit: int) -> str:
    """Untrusted ``text`` as an escaped mrkdwn code block of at most ``limit`` characters."""
    return _FENCE + truncate(code_text(text), limit - 2 * len(_FENCE)) + _FENCE


def is_truncated(text: str, limit: int) -> bool:
    """True when ``code_block(text, limit)`` would have to cut ``text``."""
    return len(code_text(text)) > limit - 2 * len(_FENCE)
