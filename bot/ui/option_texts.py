"""What a list of choices shows, each choice told apart from the others: Slack cuts an
option's or a button's text at 75 characters, and two long values that begin alike must
not read the same."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .mrkdwn import ELLIPSIS, visible_bidi


def option_texts(values: Sequence[str], limit: int) -> list[str]:
    """Each of ``values`` as a ``plain_text`` of at most ``limit`` characters: whole when it
    fits, else its start and its end ("start…end"); texts that still read alike (values
    differing only in the middle, or repeated) end with their place in the list, "(#3)"."""
    texts = [_cut(v, limit) for v in values]
    numbered: set[int] = set()
    while len(set(texts)) < len(texts):
        counts = Counter(texts)
        for n, text in enumerate(texts):
            if counts[text] > 1 and n not in numbered:
                numbered.add(n)
                suffix = f" (#{n + 1})"
                texts[n] = _cut(values[n], limit - len(suffix)) + suffix
    return texts


def _cut(value: str, limit: int) -> str:
    """``value`` (bidirectional controls shown, not obeyed) within ``limit``, keeping its
    start and end."""
    text = visible_bidi(value)
    if len(text) <= limit:
        return text
    head = (limit - len(ELLIPSIS)) // 2
    tail = limit - len(ELLIPSIS) - head
    return text[:head] + ELLIPSIS + text[len(text) - tail :]
