"""Faults to inject into the Web API and deliveries, and the log of every API call.

Reliability tests arrange "the next 2 calls of chat.postMessage are rate limited" and then
read back what the app called, in order, with what arguments and what it got.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Literal

from .entities import JsonObject

ANY_METHOD = "*"

FaultKind = Literal["ratelimit", "server_error", "latency"]


@dataclass(kw_only=True)
class _Fault:
    kind: FaultKind
    method: str
    remaining: int | None  # None: until cleared
    retry_after: int = 1
    status: int = 500
    seconds: float = 0.0

    def matches(self, method: str) -> bool:
        return self.method in (ANY_METHOD, method) and (
            self.remaining is None or self.remaining > 0
        )


@dataclass(frozen=True, kw_only=True)
class ApiFault:
    """What to do to one call: wait `delay` seconds, then answer normally or fail."""

    delay: float = 0.0
    ratelimit_after: int | None = None
    server_error: int | None = None


@dataclass(frozen=True, kw_only=True)
class Call:
    """One Web API call as the sandbox saw it."""

    seq: int
    at: float
    method: str
    args: JsonObject
    status: int
    ok: bool
    error: str | None

    def to_json(self) -> JsonObject:
        return {
            "seq": self.seq,
            "at": self.at,
            "method": self.method,
            "args": self.args,
            "status": self.status,
            "ok": self.ok,
            "error": self.error,
        }


@dataclass(kw_only=True)
class Faults:
    """The injected faults and the call log; methods use Slack's names (`chat.postMessage`)."""

    _faults: list[_Fault] = field(default_factory=list)
    _drops: int = 0
    _calls: list[Call] = field(default_factory=list)

    def rate_limit(self, method: str = ANY_METHOD, *, count: int = 1, retry_after: int = 1) -> None:
        """Answer the next `count` calls of `method` with HTTP 429 `ratelimited`."""
        self._faults.append(
            _Fault(kind="ratelimit", method=method, remaining=count, retry_after=retry_after)
        )

    def server_error(self, method: str = ANY_METHOD, *, count: int = 1, status: int = 500) -> None:
        """Answer the next `count` calls of `method` with an HTTP 5xx."""
        self._faults.append(
            _Fault(kind="server_error", method=method, remaining=count, status=status)
        )

    def latency(
        self, method: str = ANY_METHOD, *, seconds: float, count: int | None = None
    ) -> None:
        """Delay calls of `method` by `seconds` (the next `count`, or all until cleared)."""
        self._faults.append(_Fault(kind="latency", method=method, remaining=count, seconds=seconds))

    def drop_deliveries(self, count: int = 1) -> None:
        """Silently lose the next `count` deliveries to the app (the user sees a timeout)."""
        self._drops += count

    def clear(self) -> None:
        """Remove every pending fault (the call log stays)."""
        self._faults.clear()
        self._drops = 0

    def pending(self, method: str = ANY_METHOD) -> int:
        """How many injected faults for `method` (any, by default) have calls left to hit."""
        return sum(1 for f in self._faults if method in (ANY_METHOD, f.method))

    def take_drop(self) -> bool:
        """Consume one dropped delivery if any is pending."""
        if self._drops > 0:
            self._drops -= 1
            return True
        return False

    def take(self, method: str) -> ApiFault:
        """Consume the faults that apply to this call of `method`."""
        delay = 0.0
        for fault in self._faults:
            if fault.kind == "latency" and fault.matches(method):
                delay += fault.seconds
                self._spend(fault)
        for fault in self._faults:
            if fault.kind != "latency" and fault.matches(method):
                self._spend(fault)
                if fault.kind == "ratelimit":
                    return ApiFault(delay=delay, ratelimit_after=fault.retry_after)
                return ApiFault(delay=delay, server_error=fault.status)
        return ApiFault(delay=delay)

    def _spend(self, fault: _Fault) -> None:
        if fault.remaining is not None:
            fault.remaining -= 1
        self._faults = [f for f in self._faults if f.remaining is None or f.remaining > 0]

    def record(self, method: str, args: JsonObject, *, status: int, error: str | None) -> Call:
        call = Call(
            seq=len(self._calls) + 1,
            at=time.time(),
            method=method,
            args=args,
            status=status,
            ok=error is None,
            error=error,
        )
        self._calls.append(call)
        return call

    def calls(self, method: str | None = None) -> list[Call]:
        """The call log, oldest first, optionally only one method."""
        return [c for c in self._calls if method is None or c.method == method]

    def clear_calls(self) -> None:
        self._calls.clear()
