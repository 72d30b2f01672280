"""The contract between the agent loop and a model provider."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

from ..errors import ModelError
from ..messages import JSONValue, Message, ToolCall


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """What the model is told about a tool: its name, purpose and JSON input schema."""

    name: str
    description: str
    input_schema: dict[str, JSONValue]


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """One call to the model: the conversation so far and the tools it may call."""

    system_prompt: str | None
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...]


@dataclass(frozen=True, kw_only=True)
class ModelResponse:
    """The model's turn: text, tool calls, or both."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


def held_as_json(response: ModelResponse) -> ModelResponse:
    """``response``, or ``ModelError`` when a call's arguments hold what JSON cannot (NaN
    or Infinity, which Python's JSON parser reads): the run's state, kept as JSON, could
    not be saved with the call, so it is the model's error, as arguments that are not JSON
    are."""
    for call in response.tool_calls:
        try:
            json.dumps(call.args, allow_nan=False)
        except ValueError:
            what = "a number that is not finite (NaN or Infinity)"
        except TypeError as error:
            what = f"a value that is not JSON ({error})"
        else:
            continue
        raise ModelError(
            f"the model's arguments for {call.name} (call {call.id}) hold {what}, "
            "which JSON cannot hold"
        )
    return response


class Model(Protocol):
    """A chat model that can call tools."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``; raise ``ModelError`` when the provider fails."""
        ...
