"""A URL as the log shows it keeps none of its password, whatever the password holds: its
user and password run to the last ``@`` before the host, as redis-py and urllib read them."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from redis.connection import parse_url

from agent_runtime.shown_urls import shown_url, without_url_secrets
from bot.process.redaction import redacted

PASSWORDS = ["p@ss", "p@ss@word", "p:ss", "p:s@s:", "p%40ss", "p%2Fss", "@p@"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_holding_at_or_colon_is_not_shown(password: str) -> None:
    url = f"redis://signoff:{password}@redis.internal:6379/0"
    assert parse_url(url)["host"] == "redis.internal"  # a URL redis-py connects with
    assert shown_url(url) == "redis://redis.internal:6379/0"


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_quoted_url_shows_no_piece_of_its_password(password: str) -> None:
    text = (
        f"Error connecting to rediss://admin:{password}@[::1]:6380/2?ssl_cert_reqs=none. "
        "Mail ops@example.com; retry at https://h.example/hook?token=t@k#x"
    )
    shown = (
        "Error connecting to rediss://[::1]:6380/2 Mail ops@example.com; "
        "retry at https://h.example/hook"
    )
    assert without_url_secrets(text) == shown
    assert redacted(text) == shown


def test_an_at_in_the_path_or_query_is_not_taken_for_the_end_of_a_password() -> None:
    """The authority ends at the first ``/``, ``?`` or ``#`` (RFC 3986): a later ``@`` is
    the path's or the query's, and the host before it stays shown."""
    assert shown_url("https://h.example/users/@me?to=a@b") == "https://h.example/users/@me"
    assert shown_url("https://h.example?to=a@b") == "https://h.example"
    assert shown_url("https://u:p@h.example#a@b") == "https://h.example"


@pytest.mark.parametrize("show", [without_url_secrets, redacted])
def test_a_long_run_of_letters_is_read_once(show: Callable[[str], str]) -> None:
    """An error quoting a long token-like run (an agent's output, a base64 blob) is shown
    at once: each run is tried as a URL's scheme from its start only, not from each letter."""
    blob = "A1b2" * 50_000  # 200,000 characters that could begin a scheme anywhere
    started = time.perf_counter()
    assert show(f"{blob} and {blob}") == f"{blob} and {blob}"
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("show", [without_url_secrets, redacted])
def test_a_scheme_right_after_digits_or_dots_is_still_found(show: Callable[[str], str]) -> None:
    said = "failed:1.redis://signoff:pw@redis.internal:6379/0?x=y and 7xhttps://h.example/a?k=s"
    assert show(said) == "failed:1.redis://redis.internal:6379/0 and 7xhttps://h.example/a"
