"""Tools: typed Python functions a model may call, and the context they run with."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_type_hints, overload

import pydantic

from .asking import InterruptPoint
from .closed_model import ClosedModel
from .errors import ResumeError, ToolInputError, UsageError
from .interrupts import Decision
from .messages import JSONValue, ToolCall
from .models.base import ToolSpec


@dataclass(kw_only=True)
class ToolContext:
    """What a running tool knows about its call, and how it asks a human.

    A tool that interrupts runs again from the top on resume: code before ``interrupt()``
    runs twice, so it must be safe to repeat. ``idempotency_key`` is the same for every
    attempt of this call, in any process; ``attempt`` is 1 the first time the tool starts
    and more when an earlier attempt started without its result being saved (it asked a
    human, or its process died mid-tool), so a tool with side effects can check, under
    that key, whether they already happened.
    """

    tool_call: ToolCall
    point: InterruptPoint = field(repr=False)
    idempotency_key: str = ""
    attempt: int = 1
    is_resumed: bool = False
    resumed_metadata: dict[str, JSONValue] = field(default_factory=dict)
    original_input: dict[str, JSONValue] | None = None
    state: dict[str, JSONValue] = field(default_factory=dict)

    def interrupt(
        self, name: str, reason: JSONValue = None, *, options: Sequence[str] = ()
    ) -> JSONValue:
        """Stop the run until a human answers; on resume, return their answer.

        Without ``options`` the answer is a ``Decision``: approve, edit (the tool then runs
        again from the top with the new arguments, and ``original_input`` holds the old
        ones), reject or respond. With ``options`` it is the option the human chose, or
        their own words when the approver's policy allows a reply; declined, it is a
        reject ``Decision`` whose ``message`` is the reason.
        """
        return self.point.ask(name, reason, options=options)


ToolFunction = Callable[..., Any]


class Tool:
    """A callable the model can use: name, description and a validated input schema."""

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        input_model: type[pydantic.BaseModel] | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.description = description or inspect.getdoc(function) or self.name
        self._context_param = _context_param(function)
        self.input_model = input_model or _input_model(function, self.name)
        self.input_schema: dict[str, JSONValue] = self.input_model.model_json_schema()

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(
            name=self.name, description=self.description, input_schema=self.input_schema
        )

    def validate(self, args: dict[str, JSONValue]) -> dict[str, Any]:
        """Check ``args`` against the input schema; raise ``ToolInputError`` naming each field."""
        try:
            model = self.input_model.model_validate(args)
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'input'}: {e['msg']}"
                for e in error.errors()
            )
            raise ToolInputError(f"invalid input for {self.name}: {problems}") from error
        return {key: getattr(model, key) for key in type(model).model_fields}

    async def run(self, args: dict[str, JSONValue], context: ToolContext) -> JSONValue:
        """Validate ``args`` and call the function (sync functions run in a worker thread)."""
        kwargs = self.validate(args)
        if self._context_param:
            kwargs[self._context_param] = context
        if inspect.iscoroutinefunction(self.function):
            return await self.function(**kwargs)
        return await asyncio.to_thread(self.function, **kwargs)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"


@overload
def tool(function: ToolFunction, /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[ToolFunction], Tool]: ...
def tool(
    function: ToolFunction | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Turn a typed function into a ``Tool``; a ``ToolContext`` parameter receives the context."""
    if function is not None:
        return Tool(function)
    return lambda fn: Tool(fn, name=name, description=description)


def check_edit(tools: Mapping[str, Tool], call: ToolCall, args: dict[str, JSONValue]) -> None:
    """Refuse (``ResumeError``) edited arguments that do not fit the input schema of the
    tool ``call`` names among ``tools``."""
    tool = tools.get(call.name)
    if tool is not None:
        try:
            tool.validate(args)
        except ToolInputError as error:
            raise ResumeError(str(error)) from error


def interrupt_tool(name: str, input_model: type[pydantic.BaseModel], description: str) -> Tool:
    """A tool whose every call asks a human a question; their answer is the tool's output.

    The model's arguments (validated by ``input_model``) are the interrupt's reason; a
    ``choices`` or ``options`` list among them is offered as the answers to pick from. A
    question declined or left to expire gives the model a sentence saying so.
    """

    async def ask_human(context: ToolContext, **args: Any) -> JSONValue:
        options = next((args[k] for k in ("choices", "options") if _strings(args.get(k))), ())
        answer = context.point.ask(name, reason=args, question=True, options=options)
        if isinstance(answer, Decision):
            return _declined(answer)
        return answer

    return Tool(ask_human, name=name, description=description, input_model=input_model)


def _strings(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _declined(decision: Decision) -> str:
    """What the model reads when a question got a decision instead of an answer."""
    if decision.type == "respond" and decision.message is not None:
        return decision.message
    if decision.type == "approve":
        return "The person acknowledged the question without answering it."
    return f"The question was not answered: {decision.message or 'the person declined'}."


def _context_param(function: ToolFunction) -> str | None:
    """The name of the parameter annotated ``ToolContext``, if the function takes one."""
    hints = _hints(function)
    return next((p for p, hint in hints.items() if hint is ToolContext), None)


def _input_model(function: ToolFunction, name: str) -> type[pydantic.BaseModel]:
    """Build a pydantic model of the function's parameters, minus its ToolContext."""
    hints = _hints(function)
    fields: dict[str, Any] = {}
    for param in inspect.signature(function).parameters.values():
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {name}: *args and **kwargs cannot be described to a model")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model: type[pydantic.BaseModel] = pydantic.create_model(
        f"{name}_input", __base__=ClosedModel, **fields
    )
    return model


def _hints(function: ToolFunction) -> dict[str, Any]:
    try:
        return get_type_hints(function, include_extras=True)
    except (NameError, TypeError) as error:
        raise UsageError(
            f"tool {function.__name__}: cannot resolve its annotations: {error}"
        ) from error
