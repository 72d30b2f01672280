"""An OpenAI-compatible chat-completions provider over aiohttp, with tool calls.

Works with any server speaking ``POST {base_url}/chat/completions`` (OpenAI, Azure's
OpenAI-compatible endpoint, vLLM, Ollama, LiteLLM); a query the base URL carries
(``?api-version=``) is sent with each request. The api key goes only into the
``Authorization`` header: it never appears in errors, logs or ``repr``, nor do the user,
password, query or fragment a base URL may carry (a gateway's ``?api-key=``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse

import aiohttp
import pydantic

from ..errors import ModelError
from ..messages import JSONValue, Message, ToolCall
from ..shown_urls import shown_url, without_url_secrets
from .base import ModelRequest, ModelResponse, ToolSpec

log = logging.getLogger(__name__)

EXCERPT_CHARS = 300
MAX_RETRY_AFTER = 60.0
"""The longest ``Retry-After`` honoured; a server asking for more gets that much."""
_RETRIED = frozenset({429, 500, 502, 503, 504})


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

    Rate limits (429), server errors (5xx) and unreachable servers are retried up to
    ``max_retries`` times, after ``Retry-After`` when the server sends one (at most
    ``MAX_RETRY_AFTER`` seconds), else after ``retry_delay`` doubled each time. Every
    failure that remains (an HTTP error, a body that is not a completion, tool arguments
    that are not a JSON object) raises ``ModelError`` saying what went wrong; the agent
    ends the run with ``stop_reason == "error"``.
    """

    def __init__(
        self,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str,
        model: str,
        timeout: float = 120.0,
        max_retries: int = 3,
        retry_delay: float = 1.0,
    ) -> None:
        parts = urllib.parse.urlsplit(base_url)  # a gateway's query stays a query
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                f"base_url {shown_url(base_url)!r} holds a user or password: the endpoint is "
                "sent api_key as a Bearer token, and a URL's credentials cannot go with it; "
                "leave them out of base_url"
            )
        path = parts.path.rstrip("/") + "/chat/completions"
        self.url = urllib.parse.urlunsplit(parts._replace(path=path, fragment=""))
        self._shown = shown_url(self.url)  # what logs, errors and repr say of it
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_delay = retry_delay
        self._api_key = api_key

    def __repr__(self) -> str:
        return f"OpenAIChatModel(url={self._shown!r}, model={self.model!r})"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        body = _request_body(request, model=self.model)
        text = await self._post(body)
        return self._parse(text)

    async def _post(self, body: dict[str, JSONValue]) -> str:
        """The response body, after retrying what a later attempt may fix."""
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            backoff = self.retry_delay * 2**attempt
            try:
                status, text, retry_after = await self._post_once(body)
            except ModelError:
                if last:
                    raise
                log.warning("%s unreachable (attempt %d); retrying", self._shown, attempt + 1)
                await asyncio.sleep(backoff)
                continue
            if status < 400:
                return text
            log.warning("%s answered HTTP %d for model %s", self._shown, status, self.model)
            if last or status not in _RETRIED:
                raise ModelError(f"{self._shown} answered HTTP {status}: {self._excerpt(text)}")
            await asyncio.sleep(backoff if retry_after is None else retry_after)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _post_once(self, body: dict[str, JSONValue]) -> tuple[int, str, float | None]:
        """One request: the status, the body, and the server's Retry-After in seconds."""
        headers = {"Authorization": f"Bearer {self._api_key}"}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as session,
                session.post(self.url, json=body, headers=headers) as response,
            ):
                raw = await response.read()
                retry_after = _seconds(response.headers.get("Retry-After"))
                return response.status, raw.decode("utf-8", errors="replace"), retry_after
        except TimeoutError as error:
            raise ModelError(f"{self._shown} did not answer within {self.timeout:g}s") from error
        except aiohttp.ClientError as error:
            said = without_url_secrets(self._redact(str(error)), self.url)
            raise ModelError(f"could not reach {self._shown}: {said}") from error

    def _parse(self, text: str) -> ModelResponse:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise ModelError(
                f"{self._shown} answered with something that is not JSON: {self._excerpt(text)}"
            ) from error
        try:
            completion = _Completion.model_validate(data)
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'body'}: {e['msg']}"
                for e in error.errors()
            )
            raise ModelError(
                f"{self._shown} answered a malformed chat completion: {problems}"
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


def _seconds(retry_after: str | None) -> float | None:
    """``Retry-After`` in seconds (capped), None when absent or given as an HTTP date."""
    try:
        return min(max(float(retry_after), 0.0), MAX_RETRY_AFTER) if retry_after else None
    except ValueError:
        return None
