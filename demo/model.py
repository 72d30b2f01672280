"""The demo agents' model: a fixed script, like ``ScriptedModel``, that any process can continue.

``ScriptedModel`` counts the requests one object has seen, which suits a test that runs
once. The bot builds each agent once and runs it for many threads, and a restarted bot
resumes runs it never started; so here the next turn is chosen by how many times the
model has already answered in the conversation it is given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from agent_runtime import Message, ModelError, ModelRequest, ModelResponse, ToolCall
from agent_runtime.messages import JSONValue, new_id

Turn = str | Sequence[ToolCall] | Callable[[Sequence[Message]], "str | Sequence[ToolCall]"]
"""Final text, tool calls, or a function of the conversation that returns either."""


class ConversationScript:
    """Answers with turn N when the conversation already holds N answers of the model."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self._turns = list(turns)

    async def generate(self, request: ModelRequest) -> ModelResponse:
        answered = sum(1 for message in request.messages if message.role == "assistant")
        if answered >= len(self._turns):
            raise ModelError(f"the script has {len(self._turns)} turns; all were played")
        turn = self._turns[answered]
        played = turn(request.messages) if callable(turn) else turn
        if isinstance(played, str):
            return ModelResponse(text=played)
        calls = tuple(
            ToolCall(id=call.id or new_id("call"), name=call.name, args=dict(call.args))
            for call in played
        )
        return ModelResponse(tool_calls=calls)


def last_tool_result(messages: Sequence[Message]) -> tuple[JSONValue, bool]:
    """The content of the latest tool message (JSON decoded when it is JSON) and its error flag."""
    for message in reversed(messages):
        if message.role == "tool":
            try:
                return json.loads(message.content), message.is_error
            except ValueError:
                return message.content, message.is_error
    return None, False
