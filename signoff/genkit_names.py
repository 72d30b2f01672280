"""The one name each Genkit tool call is carded under, whatever the model called it: Genkit
runs a plugin's ``ops/lookup`` when the model calls it ``lookup`` too (a provider's
``srv/echo`` as ``echo``), so a card carries the name of the tool Genkit ran, and a
per-tool policy keyed by that name applies to every spelling."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from genkit.middleware import (
    BaseMiddleware,
    GenerateMiddlewareContext,
    MultipartToolResponse,
    ToolHookParams,
)

from agent_runtime.session import StoredSession

_naming: ContextVar[dict[str, str] | None] = ContextVar("signoff_genkit_names", default=None)
"""What the running generation's calls were named, by the name the model used: Genkit
copies a middleware for each generation, so what it shares travels in the context."""


class NameCalls(BaseMiddleware[Any]):
    """Notes which tool Genkit runs for each name the model calls one by."""

    async def wrap_tool(
        self,
        params: ToolHookParams,
        ctx: GenerateMiddlewareContext,
        next_fn: Callable[
            [ToolHookParams, GenerateMiddlewareContext], Awaitable[MultipartToolResponse]
        ],
    ) -> MultipartToolResponse:
        names, request = _naming.get(), params.tool_request_part.tool_request
        if names is not None and request is not None:
            names[request.name] = params.tool.name
        return await next_fn(params, ctx)


@contextmanager
def naming(names: dict[str, str]) -> Iterator[None]:
    """Collect into ``names`` the names of the tools the generation run meanwhile runs."""
    token = _naming.set(names)
    try:
        yield
    finally:
        _naming.reset(token)


def names_of(stored: StoredSession | None) -> dict[str, str]:
    """The tools' names by the names the model called them, as the thread keeps them (a
    thread saved before it kept them has none: its calls go by the model's names)."""
    state = (stored.snapshot.get("genkit") or {}) if stored else {}
    kept = state.get("names") if isinstance(state, dict) else None
    return {k: v for k, v in kept.items() if isinstance(v, str)} if isinstance(kept, dict) else {}
