"""A model that plays back a fixed script: for tests, examples and the demo."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..errors import ModelError
from ..messages import ToolCall, new_id
from .base import ModelRequest, ModelResponse

Turn = str | Sequence[ToolCall]


class ScriptedModel:
    """Answers each request with the next turn: final text, or a list of tool calls.

    Tool calls without an id get a fresh one. Every request is kept in ``requests``.
    """

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turns = list(turns)
        self.requests: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if len(self.requests) > len(self._turns):
            raise ModelError(
                f"the script has {len(self._turns)} turns; request {len(self.requests)} has none"
            )
        turn = self._turns[len(self.requests) - 1]
        if isinstance(turn, str):
            return ModelResponse(text=turn)
        calls = tuple(
            replace(call, id=call.id or new_id("call"), args=dict(call.args)) for call in turn
        )
        return ModelResponse(tool_calls=calls)
