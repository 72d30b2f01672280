"""The tool names a ``GenkitAgent`` is given, checked against the tools its Genkit instance
has registered when the agent is made: Genkit itself looks them up at the first
generation, so a misspelt name would fail the first run (hours later), not the start-up
build of the agent; the names its cards may carry; the schema its Edit form is made from;
and an approver's edit, checked against its tool's input type before it is recorded."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from genkit import ActionKind, Genkit

from agent_runtime.edit_checks import check_model
from agent_runtime.errors import UsageError
from agent_runtime.messages import JSONValue


def check_tools(ai: Genkit, tools: Sequence[str]) -> None:
    """Refuse (UsageError) a name in ``tools`` that no tool registered on ``ai`` has, and two
    tools sharing a last segment (``ops/lookup``, ``lookup``). A name with a ``/`` (a
    plugin's ``googleai/...``, a dynamic provider's ``mcp:tool/*``) is resolved by its
    plugin or provider on demand, so Genkit checks it when first used."""
    unknown = [
        name
        for name in tools
        if "/" not in name and ai.registry.registered_action(ActionKind.TOOL, name) is None
    ]
    if unknown:
        raise UsageError(
            "GenkitAgent(tools=...) names tools this Genkit instance has not registered: "
            f"{sorted(unknown)}; its tools are {_registered(ai)} "
            "(define each with @ai.tool() before the agent)"
        )
    by_short: dict[str, list[str]] = {}
    for action in called_names([n for n in tools if not n.endswith("*")]) or ():
        by_short.setdefault(action.rpartition("/")[2], []).append(action)
    shared = sorted(sorted(actions) for actions in by_short.values() if len(actions) > 1)
    if shared:
        raise UsageError(
            f"GenkitAgent(tools=...) names tools that share a last segment: {shared}; the "
            "model may call a tool by it, so Genkit refuses to offer them in one generation"
        )


_SELECTOR = re.compile(r"^[^/:]+:tool/(.+)$")
"""A dynamic provider's tools (``mcp:tool/*``, ``mcp:tool/echo``), as Genkit parses them."""


def called_names(tools: Sequence[str]) -> frozenset[str] | None:
    """The names a card of ``tools`` carries: each tool's action's name (a plugin's
    ``ops/lookup``; ``srv/echo`` for a provider's ``mcp:tool/srv/echo``), the name the
    model is offered, whether it calls the tool by that or by its last segment (``lookup``).
    None when a selector with a ``*`` is among them: the provider lists its tools only
    when a generation asks."""
    names: set[str] = set()
    for name in tools:
        selected = _SELECTOR.match(name)
        action = selected.group(1) if selected else name
        if action.endswith("*"):
            return None
        names.add(action)
    return frozenset(names)


def listed_as_it_runs(tools: Sequence[str]) -> list[str]:
    """What the names of the tools a selector with a ``*`` among ``tools`` lists begin with
    (``srv/`` for ``mcp:tool/srv/*``; empty, any name, for ``mcp:tool/*``)."""
    actions = [(m.group(1) if (m := _SELECTOR.match(n)) else n) for n in tools]
    return [a.removesuffix("*") for a in actions if a.endswith("*")]


def _registered(ai: Genkit) -> list[str]:
    """The names of the tools registered on ``ai``. Genkit lists them only from a coroutine,
    and this runs in a constructor, perhaps inside a running loop; its registry is
    thread-safe, so they are listed on a thread of their own."""
    listing = ai.registry.resolve_actions_by_kind(ActionKind.TOOL)
    with ThreadPoolExecutor(max_workers=1) as thread:
        return sorted(thread.submit(asyncio.run, listing).result())


def input_schema(ai: Genkit, tool: str) -> dict[str, JSONValue] | None:
    """The JSON Schema of the arguments the card shows for ``tool`` as registered on ``ai``:
    its input's, or, for a tool taking no object, an object of that input as ``input``.
    None for a tool it has not registered (a plugin's, resolved when first used)."""
    action = ai.registry.registered_action(ActionKind.TOOL, tool)
    schema = action.input_schema if action is not None else None
    if not schema:
        return None
    if schema.get("type") == "object":
        return dict(schema)
    return {"type": "object", "properties": {"input": schema}, "required": ["input"]}


def check_input(ai: Genkit, tool: str, args: dict[str, JSONValue]) -> None:
    """ResumeError when the input an edit's ``args`` stand for (``input`` for a tool taking
    no object) does not fit the input type of ``tool`` as registered on ``ai``."""
    action = ai.registry.registered_action(ActionKind.TOOL, tool)
    if action is None or action.input_type is None:
        return
    takes_object = (action.input_schema or {}).get("type") == "object"
    check_model(tool, action.input_type, args if takes_object else args.get("input"))
