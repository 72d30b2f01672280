"""``signoff.Client``: ask for an approval over HTTP from any Python code, and wait.

    async with Client("https://signoff.example.com", token) as client:
        request = await client.create(NewRequest(title="Delete 42 volumes", channel="C0OPS",
                                                 approvers=["S0ONCALL"]))
        answer = await client.wait(request.id)
        if answer.approved:
            ...
            await client.report_outcome(request.id, exit_status=0, duration_seconds=12.0)

``wait`` long-polls (the server answers the moment the request is decided) and rides out
a restarting server, a network blip or a Redis failover by asking again with backoff, and
a server refusing one more long-poll of its client (429) by asking again after the
``Retry-After`` it gives.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import os
import ssl
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from pydantic import ValidationError
from yarl import URL

from bot.api.long_polls import MAX_WAIT
from bot.api.request_records import REQUESTS_PATH
from bot.api.schemas import JobStart, NewRequest, OutcomeReport, RequestView, Withdrawal

log = logging.getLogger(__name__)

_TRANSIENT = frozenset({502, 503, 504})
_FIRST_BACKOFF, _MAX_BACKOFF = 0.25, 10.0


class SignoffError(Exception):
    """Signoff could not be reached, or answered with something that is not the API's."""


class SignoffUnreachable(SignoffError):
    """Signoff (or its Redis) could not be reached, even after retrying: nothing is known."""


class RequestRefused(SignoffError):
    """Signoff answered the call with an error (bad input, no valid token, unknown id)."""

    def __init__(
        self,
        status: int,
        message: str,
        field: str | None = None,
        *,
        view: RequestView | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message
        self.field = field
        self.view = view
        """The request as it stands, when the call failed for its state (409)."""
        self.retry_after = retry_after
        """The seconds to wait before asking again, when Signoff said (``Retry-After``:
        a 429 for a client holding as many long-polls open as it may)."""


_WITH_CREDENTIALS = (
    "the address has a user or password in it (user:password@): give it without them, "
    "since the API token alone is what Signoff checks"
)


class Client:
    """One Signoff server and an API client's token."""

    def __init__(
        self, url: str, token: str, *, connect_timeout: float = 10.0, read_timeout: float = 30.0
    ) -> None:
        """``read_timeout``: how long an answer may take (beyond a long-poll's wait) before
        the server counts as unreachable, so a server that hangs never hangs the job.
        ValueError for a token no HTTP header can carry, or an address with a user or
        password in it (the token alone authenticates; a password would be shown in what the
        client says of the address)."""
        token = token.strip()  # read from a file or a mounted secret, with its newline
        if not (token.isascii() and token.isprintable()):
            raise ValueError("the API token has a character no token has (a control character?)")
        if "@" in urlsplit(url).netloc:
            raise ValueError(_WITH_CREDENTIALS)
        self._base = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"}
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._session: aiohttp.ClientSession | None = None
        self._clock_offset = 0.0
        self._sent = False

    @property
    def sent(self) -> bool:
        """Whether a call has reached the wire yet: until then, the server has made nothing
        (every attempt failed to connect)."""
        return self._sent

    def server_time(self) -> float:
        """Now, in Unix seconds, by the server's clock as its last answer's ``Date`` told
        (to the second): a request's times are the server's, and this host's clock may
        be wrong."""
        return time.time() + self._clock_offset

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def create(self, request: NewRequest, *, retry_for: float = 60.0) -> RequestView:
        """Post a request; it is retried through transient failures for ``retry_for``
        seconds only when it carries an ``idempotency_key`` (so a retry posts no second card)."""
        # Only what the caller set: an explicit None (``reminders=None``: none) is sent.
        body = request.model_dump(mode="json", exclude_unset=True)
        patience = retry_for if request.idempotency_key else 0.0
        return await self._call("POST", REQUESTS_PATH, body, patience=patience)

    async def get(self, request_id: str, *, wait: float | None = None) -> RequestView:
        """Where the request stands; with ``wait``, answered as soon as it is decided."""
        waits = 0.0 if wait is None else min(wait, MAX_WAIT)
        query = f"?wait={waits:g}" if wait is not None else ""
        path = f"{REQUESTS_PATH}/{request_id}{query}"
        return await self._call("GET", path, None, patience=0.0, waits=waits)

    async def wait(
        self,
        request_id: str,
        *,
        within: float | None = None,
        on_update: Callable[[RequestView], None] | None = None,
        renew_every: float = MAX_WAIT,
    ) -> RequestView:
        """Wait until the request is decided (or ``within`` seconds pass: the pending
        view). Reconnects with backoff while the server or the network is away, and after
        the server's ``Retry-After`` while it refuses one more long-poll (429);
        ``on_update`` sees every answer that differs from the one before: a decision at
        once, anything else (votes, reminders, escalation) when the long-poll is renewed,
        every ``renew_every`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = None if within is None else loop.time() + within
        backoff, last = _FIRST_BACKOFF, None
        while True:
            left = renew_every if deadline is None else max(0.0, deadline - loop.time())
            try:
                view = await self.get(request_id, wait=min(left, renew_every))
            except RequestRefused as exc:  # its client's other long-polls hold every slot
                if exc.retry_after is None or (deadline is not None and loop.time() >= deadline):
                    raise
                log.info(
                    "Signoff is busy (%s); asking again in %.0f s", exc.message, exc.retry_after
                )
                wake = loop.time() + exc.retry_after
                await asyncio.sleep(
                    (wake if deadline is None else min(wake, deadline)) - loop.time()
                )
                continue
            except SignoffUnreachable as exc:
                if deadline is not None and loop.time() >= deadline:
                    raise
                log.info("Signoff not reachable (%s); asking again in %.1f s", exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
                continue
            backoff = _FIRST_BACKOFF
            if on_update is not None and view != last:
                on_update(view)
            last = view
            if view.final or (deadline is not None and loop.time() >= deadline):
                return view

    async def withdraw(self, request_id: str, *, reason: str = "") -> RequestView:
        """Withdraw a pending request; RequestRefused (409) when it was decided already."""
        body = Withdrawal(reason=reason).model_dump()
        path = f"{REQUESTS_PATH}/{request_id}/withdraw"
        return await self._call("POST", path, body, patience=10.0)

    async def start(self, request_id: str, attempt: str, *, retry_for: float = 30.0) -> RequestView:
        """Say, once, that the approved job starts its command (``attempt``: a token of this
        try, so a retry through transient failures for ``retry_for`` s is the same start);
        RequestRefused (409, with the request's ``started_at`` and ``outcome``) when another
        try started it already, or its outcome was reported."""
        body = JobStart(attempt=attempt).model_dump()
        path = f"{REQUESTS_PATH}/{request_id}/start"
        return await self._call("POST", path, body, patience=retry_for)

    async def report_outcome(
        self, request_id: str, *, exit_status: int, duration_seconds: float, summary: str = ""
    ) -> RequestView:
        """Tell the card's thread and the audit trail what the approved job did (once)."""
        report = OutcomeReport(
            exit_status=exit_status, duration_seconds=duration_seconds, summary=summary
        )
        path = f"{REQUESTS_PATH}/{request_id}/outcome"
        return await self._call("POST", path, report.model_dump(exclude_none=True), patience=30.0)

    async def report_not_run(self, request_id: str, why: str) -> RequestView:
        """Tell the card's thread and the audit trail the approved job did not run, and why
        (its card reads approved all the same); once, as ``report_outcome``."""
        path = f"{REQUESTS_PATH}/{request_id}/outcome"
        body = OutcomeReport(not_run=why).model_dump(exclude_none=True)
        return await self._call("POST", path, body, patience=10.0)  # a gate told to stop

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        patience: float,
        waits: float = 0.0,
    ) -> RequestView:
        """One API call; transient failures are retried with backoff (no sooner than a
        ``Retry-After`` given) for ``patience`` s.
        ``waits``: the seconds the server holds the answer (a long-poll)."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + patience
        backoff = _FIRST_BACKOFF
        while True:
            try:
                return await self._once(method, path, body, waits=waits)
            except (aiohttp.ClientError, TimeoutError, _Transient) as exc:
                # A server that said when to ask again (a 503 while a start's approval is
                # being asked again) is not asked sooner.
                told = exc.retry_after if isinstance(exc, _Transient) else None
                pause = max(backoff, told or 0.0)
                if loop.time() + pause > give_up:
                    raise SignoffUnreachable(
                        f"cannot reach Signoff at {self._base}: {_why(exc)}"
                    ) from exc
                if backoff == _FIRST_BACKOFF:
                    left = give_up - loop.time()
                    if isinstance(exc, _Transient):  # an answer, if not Signoff's own
                        log.warning(
                            "%s answered %s; trying again for %.0f s", self._base, exc, left
                        )
                    else:
                        log.warning(
                            "cannot reach Signoff at %s (%s); trying again for %.0f s",
                            self._base,
                            _why(exc),
                            left,
                        )
                await asyncio.sleep(pause)
                backoff = min(backoff * 2, _MAX_BACKOFF)

    async def _once(
        self, method: str, path: str, body: dict[str, Any] | None, *, waits: float
    ) -> RequestView:
        if self._session is None:
            sending = aiohttp.TraceConfig()
            sending.on_request_headers_sent.append(self._on_sent)
            self._session = aiohttp.ClientSession(headers=self._headers, trace_configs=[sending])
        timeout = aiohttp.ClientTimeout(
            total=waits + self._read_timeout, sock_connect=self._connect_timeout
        )
        url = self._base + path
        # A redirect is not followed: aiohttp would follow one to another address without
        # the token, and a POST as a GET, so the answer would name the wrong problem.
        async with self._session.request(
            method, url, json=body, timeout=timeout, allow_redirects=False
        ) as response:
            self._read_clock(response.headers.get("Date"))
            if 300 <= response.status < 400:
                raise SignoffError(self._redirected(response, path))
            text = await response.text(errors="replace")  # a proxy's page, in any charset
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if response.status in _TRANSIENT:
                message = data.get("error") if isinstance(data, dict) else text[:200]
                raise _Transient(
                    f"{response.status}: {message}",
                    retry_after=_seconds(response.headers.get("Retry-After")),
                )
            if not isinstance(data, dict) or (response.status < 400 and "status" not in data):
                raise SignoffError(
                    f"{response.status} from {self._base}: not the Signoff API (asked {url}; "
                    f"give the address Signoff serves {REQUESTS_PATH} under)"
                )
            if response.status >= 400 and not {"id", "status"} <= data.keys():
                raise RequestRefused(
                    response.status,
                    str(data.get("error", "")),
                    data.get("field"),
                    retry_after=_seconds(response.headers.get("Retry-After")),
                )
            try:
                view = RequestView.model_validate(data)
            except ValidationError as exc:
                raise SignoffError(f"an answer Signoff should not give: {exc}") from exc
            if response.status >= 400:
                raise RequestRefused(response.status, str(data.get("error", "")), view=view)
            return view

    def _redirected(self, response: aiohttp.ClientResponse, path: str) -> str:
        """Why an answer redirecting elsewhere ends the call, and the address to give."""
        target = response.headers.get("Location", "")
        with contextlib.suppress(ValueError):
            target = str(response.url.join(URL(target)))
        base = target.removesuffix(path) if target.endswith(path) else target
        return (
            f"{response.status} from {self._base}: it redirects to {target or 'no address'}; "
            f"give Signoff's address as {base or 'the one it is served at'} (the client "
            "follows no redirect, so the token goes only to the address given)"
        )

    async def _on_sent(self, *_: object) -> None:
        self._sent = True

    def _read_clock(self, date: str | None) -> None:
        """How far the server's clock is from this host's, from an answer's ``Date``."""
        with contextlib.suppress(TypeError, ValueError, IndexError):
            served = email.utils.parsedate_to_datetime(date or "")
            self._clock_offset = served.timestamp() - time.time()


def _seconds(retry_after: str | None) -> float | None:
    """A ``Retry-After`` given in seconds (the form Signoff sends); None for any other."""
    try:
        return max(0.0, float(retry_after or ""))
    except ValueError:
        return None


class _Transient(Exception):
    """A 502/503/504: the server (or its Redis) is away for now; worth asking again, not
    before its ``Retry-After`` when it gave one."""

    def __init__(self, message: str, *, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _why(exc: Exception) -> str:
    """Why a call failed, in a person's words: the system's reason for a refused or
    unresolved connection (not aiohttp's ``ssl:default`` details)."""
    if isinstance(exc, aiohttp.ClientConnectorError) and not isinstance(
        exc.os_error,
        ssl.SSLError,  # its errno is TLS's, its text the one to show
    ):
        error = exc.os_error
        if error.errno and error.errno > 0:  # a system error; name resolution's are below 0
            return os.strerror(error.errno)
        if error.strerror:
            return error.strerror
    if isinstance(exc, TimeoutError):
        return "it did not answer in time"
    if isinstance(exc, aiohttp.ClientSSLError) and getattr(exc.os_error, "reason", "") in _NOT_TLS:
        return f"{exc}; it does not speak TLS: is its address http://, not https://?"
    return str(exc) or type(exc).__name__


_NOT_TLS = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"})
"""OpenSSL's reasons for a server that answered a TLS hello in plain text (by version)."""
