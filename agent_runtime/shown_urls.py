"""URLs as a log line may show them: scheme, host, port and path, never a password or a
query string (a callback URL may carry ``?token=``, a Redis URL its password, a model's
base URL ``?api-key=``)."""

from __future__ import annotations

import re

SCHEME = r"(?<![A-Za-z0-9+.-])(?P<lead>[0-9+.-]*)(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)"
"""A URL's scheme, tried only from the start of a run of the characters a scheme holds
(``lead``: those before its first letter, which no scheme begins with), so a long run is
read once, not once from each of its letters."""

_URL = re.compile(
    SCHEME + r"(?:[^\s/?#'\"]*@)?"  # user and password, to the last @: a password may hold one
    r"(?P<place>[^\s/?#'\"]*)"
    r"(?P<path>[^\s?#'\"]*)"
    r"(?:[?#][^\s'\"]*)?"  # query string and fragment
)


def shown_url(url: str) -> str:
    """``url`` as ``scheme://host:port/path``: without credentials, query or fragment."""
    return _URL.sub(_shown, url)


def without_url_secrets(text: str, *urls: str) -> str:
    """``text`` (an error's message, say) with ``urls`` and any other URL it quotes shown
    by ``shown_url``: an exact ``url`` first, as its query may hold a space or a quote."""
    for url in urls:
        if url:
            text = text.replace(url, shown_url(url))
    return _URL.sub(_shown, text)


def _shown(found: re.Match[str]) -> str:
    return found["lead"] + found["scheme"] + found["place"] + found["path"]
