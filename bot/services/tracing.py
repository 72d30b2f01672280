"""OpenTelemetry spans of a request's lifecycle, when the OpenTelemetry API is installed
(``pip install 'signoff[otel]'``, and a tracer provider the operator sets up); without it
each span costs nothing. A job that sends a W3C ``traceparent`` with its request (as an
agent framework that traces its own runs does) gets the request's spans in its trace."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

try:
    _trace: Any = importlib.import_module("opentelemetry.trace")
    _propagate: Any = importlib.import_module("opentelemetry.propagate")
except ImportError:  # tracing is optional
    _trace = _propagate = None


@contextlib.contextmanager
def span(name: str, *, traceparent: str | None = None, **attributes: str | None) -> Iterator[None]:
    """A span around the block, a child of ``traceparent``'s span when given; attributes
    left empty are left out."""
    if _trace is None:
        yield
        return
    parent = _propagate.extract({"traceparent": traceparent}) if traceparent else None
    shown = {f"signoff.{k}": v for k, v in attributes.items() if v}
    with _trace.get_tracer("signoff").start_as_current_span(name, context=parent, attributes=shown):
        yield
