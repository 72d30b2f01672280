"""The contract between the agent loop and a model provider."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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


class Model(Protocol):
    """A chat model that can call tools."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        """Answer ``request``; raise ``ModelError`` when the provider fails."""
        ...
