"""An OpenAI-compatible chat-completions provider over aiohttp, with tool calls.

Works with any server speaking ``POST {base_url}/chat/completions`` (OpenAI, Azure's
OpenAI-compatible endpoint, vLLM, Ollama, LiteLLM). The api key goes only into the
``Authorization`` header: it never appears in errors, logs or ``repr``.
"""

from __future__ import annotations

import json
import logging

import aiohttp
import pydantic

from ..errors import ModelError
from ..messages import JSONValue, Message, ToolCall
from .base import ModelRequest, ModelResponse, ToolSpec

log = logging.getLogger(__name__)

EXCERPT_CHARS = 300


class _Function(pydantic.BaseModel):
    name: str
    arguments: str = ""


class _ToolCall(pydantic.BaseModel):
    id: str
    function: _Function


class _AssistantMessage(pydantic.BaseModel):
    content: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _Choice(pydantic.BaseModel):
    message: _AssistantMessage


class _Completion(pydantic.BaseModel):
    """The part of a chat-completions response the runtime uses; the rest is ignored."""

    choices: list[_Choice] = pydantic.Field(min_length=1)


class OpenAIChatModel:
    """A ``Model`` that calls an OpenAI-compatible chat-completions endpoint.

    Every failure (unreachable server, HTTP error, a body that is not a completion,
    tool arguments that are not a JSON object) raises ``ModelError`` saying what went
    wrong; the agent ends the run with ``stop_reason == "error"``.
    """

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str,
        model: str,
        timeout: float = 120.0,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.timeout = timeout
        self._api_key = api_key

    def __repr__(self) -> str:
        return f"OpenAIChatModel(url={self.url!r}, model={self.model!r})"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        body = _request_body(request, model=self.model)
        text = await self._post(body)
        return self._parse(text)

    async def _post(self, body: dict[str, JSONValue]) -> str:
        headers = {"Authorization": f"Bearer {self._api_key}"}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session,
                session.post(self.url, json=body, headers=headers) as response,
            ):
                raw = await response.read()
                status = response.status
        except TimeoutError as error:
            raise ModelError(f"{self.url} did not answer within {self.timeout:g}s") from error
        except aiohttp.ClientError as error:
            raise ModelError(f"could not reach {self.url}: {self._redact(str(error))}") from error
        text = raw.decode("utf-8", errors="replace")
        if status >= 400:
            log.warning("%s answered HTTP %d for model %s", self.url, status, self.model)
            raise ModelError(f"{self.url} answered HTTP {status}: {self._excerpt(text)}")
        return text

    def _parse(self, text: str) -> ModelResponse:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ModelError(
                f"{self.url} answered with something that is not JSON: {self._excerpt(text)}"
            ) from error
        try:
            completion = _Completion.model_validate(data)
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                for e in error.errors()
            )
            raise ModelError(
                f"{self.url} answered a malformed chat completion: {problems}"
            ) from error
        message = completion.choices[0].message
        calls = tuple(_tool_call(call) for call in message.tool_calls or ())
        return ModelResponse(text=message.content or message.refusal or "", tool_calls=calls)

    def _excerpt(self, text: str) -> str:
        """The start of a response body, with the api key masked should a server echo it."""
        excerpt = text.strip()
        if len(excerpt) > EXCERPT_CHARS:
            excerpt = excerpt[:EXCERPT_CHARS] + "..."
        return self._redact(excerpt) or "(empty body)"

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text


def _request_body(request: ModelRequest, *, model: str) -> dict[str, JSONValue]:
    """The chat-completions request body for ``request``."""
    messages: list[JSONValue] = []
    if request.system_prompt:
        messages.append({"role": "system", "content": request.system_prompt})
    messages.extend(_wire_message(message) for message in request.messages)
    body: dict[str, JSONValue] = {"model": model, "messages": messages}
    if request.tools:
        body["tools"] = [_wire_tool(spec) for spec in request.tools]
    return body


def _wire_message(message: Message) -> dict[str, JSONValue]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": json.dumps(call.args)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def _wire_tool(spec: ToolSpec) -> dict[str, JSONValue]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.input_schema,
        },
    }


def _tool_call(call: _ToolCall) -> ToolCall:
    """Parse a call's JSON-string arguments; anything but a JSON object is a ModelError."""
    try:
        args = json.loads(call.function.arguments) if call.function.arguments.strip() else {}
    except ValueError as error:
        raise ModelError(
            f"the model's arguments for {call.function.name} (call {call.id}) are not valid "
            f"JSON: {call.function.arguments[:EXCERPT_CHARS]!r}"
        ) from error
    if not isinstance(args, dict):
        raise ModelError(
            f"the model's arguments for {call.function.name} (call {call.id}) must be a JSON "
            f"object, got {type(args).__name__}"
        )
    return ToolCall(id=call.id, name=call.function.name, args=args)
