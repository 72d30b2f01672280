"""Stand-ins that make a bot test repeatable: a clock the test moves by hand, and a model
that scripts its tool calls."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


class ManualClock:
    """A clock that moves only when a test says so."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 11, 23, 10, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.current

    def advance(self, delta: timedelta) -> None:
        self.current += delta


class OneToolModel:
    """Asks for one tool call (then one per entry of ``then``, a round each), then reports the
    last tool result: stateless, so any process (or a fresh agent after a restart) continues a
    run the same way."""

    def __init__(
        self, tool: str, args: dict[str, Any], *, then: tuple[dict[str, Any], ...] = ()
    ) -> None:
        self.tool = tool
        self.rounds = (args, *then)
        self.requests: list[Any] = []

    async def generate(self, request: Any) -> Any:
        from agent_runtime import ModelResponse, ToolCall

        self.requests.append(request)
        results = [m for m in request.messages if m.role == "tool"]
        if len(results) < len(self.rounds):
            call = ToolCall(
                id=f"call_{len(results) + 1}", name=self.tool, args=self.rounds[len(results)]
            )
            return ModelResponse(tool_calls=(call,))
        return ModelResponse(text=f"done: {results[-1].content}")
