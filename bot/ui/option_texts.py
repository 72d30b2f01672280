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
    differing only in the middle, or repeated) end with their place in the list, "(#3)",
    and should one so numbered read as another value's text, every text does."""
    texts = [_cut(v, limit) for v in values]
    counts = Counter(texts)
    texts = [_numbered(values, n, limit) if counts[t] > 1 else t for n, t in enumerate(texts)]
    if len(set(texts)) < len(texts):  # in two passes, however the values are made
        texts = [_numbered(values, n, limit) for n in range(len(values))]
    return texts


def _numbered(values: Sequence[str], n: int, limit: int) -> str:
    """The ``n``-th of ``values`` cut to end with its place in the list: unlike any other
    text so numbered."""
    suffix = f" (#{n + 1})"
    return _cut(values[n], limit - len(suffix)) + suffix


def _cut(value: str, limit: int) -> str:
    """``value`` (bidirectional controls shown, not obeyed) within ``limit``, keeping its
    start and end."""
    text = visible_bidi(value)
    if len(text) <= limit:
        return text
    head = (limit - len(ELLIPSIS)) // 2
    tail = limit - len(ELLIPSIS) - head
    return text[:head] + ELLIPSIS + text[len(text) - tail :]
