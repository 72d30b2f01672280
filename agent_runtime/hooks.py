"""The hook registry: callbacks on a run's lifecycle events, in a predictable order.

Lower ``order`` runs first. Within one order, *Before* events run callbacks in the order
they were added and *After* events in reverse, so paired callbacks nest like a stack.
On events that can interrupt, an interrupt raised by one callback is collected and the
remaining callbacks still run, so one pass gathers every question for the human.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, get_type_hints, runtime_checkable

from .errors import UsageError
from .events import HookEvent, InterruptibleEvent
from .interrupts import Interrupt, InterruptRequested

E = TypeVar("E", bound=HookEvent)
HookCallback = Callable[[E], Awaitable[None] | None]


@runtime_checkable
class HookProvider(Protocol):
    """Bundles related callbacks; registers them all in one call."""

    def register_hooks(self, registry: HookRegistry) -> None: ...


@dataclass(frozen=True, kw_only=True)
class _Entry:
    callback: Callable[[Any], Awaitable[None] | None]
    order: int
    sequence: int


class HookRegistry:
    """Dispatches lifecycle events to the callbacks registered for their type."""

    def __init__(self) -> None:
        self._entries: dict[type[HookEvent], list[_Entry]] = {}
        self._sequence = 0

    def add(
        self,
        callback: HookCallback[E] | HookProvider,
        event: type[E] | None = None,
        *,
        order: int = 0,
    ) -> None:
        """Register a callback (event type from its annotation unless given) or a provider."""
        if isinstance(callback, HookProvider):
            callback.register_hooks(self)
            return
        event_type: type[HookEvent] = event if event is not None else _event_type_of(callback)
        if not (isinstance(event_type, type) and issubclass(event_type, HookEvent)):
            raise UsageError(f"{event_type!r} is not a hook event type")
        self._sequence += 1
        entry = _Entry(callback=callback, order=order, sequence=self._sequence)
        self._entries.setdefault(event_type, []).append(entry)

    def callbacks(self, event: HookEvent) -> list[Callable[[Any], Awaitable[None] | None]]:
        """The callbacks for ``event`` in the order they will run."""
        entries = [
            entry
            for registered, group in self._entries.items()
            if isinstance(event, registered)
            for entry in group
        ]
        direction = -1 if event.reverse_order else 1
        entries.sort(key=lambda e: (e.order, direction * e.sequence))
        return [entry.callback for entry in entries]

    async def emit(self, event: HookEvent) -> list[Interrupt]:
        """Run every callback for ``event``; return the interrupts they raised."""
        interrupts: list[Interrupt] = []
        for callback in self.callbacks(event):
            try:
                outcome = callback(event)
                if inspect.isawaitable(outcome):
                    await outcome
            except InterruptRequested as raised:
                if not isinstance(event, InterruptibleEvent):
                    raise UsageError(
                        f"{type(event).__name__} cannot interrupt; "
                        "interrupt from BeforeToolCall, BeforeTools or BeforeNodeCall"
                    ) from raised
                interrupts.append(raised.interrupt)
        return interrupts


def _event_type_of(callback: Callable[..., object]) -> type[HookEvent]:
    params = list(inspect.signature(callback).parameters.values())
    if not params:
        raise UsageError(f"hook {callback!r} takes no event parameter")
    target = callback.__call__ if not inspect.isroutine(callback) else callback  # type: ignore[operator]
    hints = get_type_hints(target)
    annotation = hints.get(params[0].name)
    if not (isinstance(annotation, type) and issubclass(annotation, HookEvent)):
        raise UsageError(
            f"hook {getattr(callback, '__name__', callback)!r}: annotate its first parameter "
            "with an event type, or pass event="
        )
    return annotation
