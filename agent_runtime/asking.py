"""Asking a human from inside a run: raise an interrupt, or return its stored answer."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from .errors import UsageError
from .interrupts import (
    DecisionType,
    Interrupt,
    InterruptRequested,
    InterruptResponse,
    interrupt_id,
)
from .messages import JSONValue, ToolCall
from .results import json_safe


class InterruptPoint:
    """Where interrupts are raised: one tool call, one tool batch or one workflow node.

    ``source_id`` fixes the interrupt ids, so asking again on replay finds the answer.
    """

    def __init__(
        self,
        source_id: str,
        *,
        responses: Mapping[str, InterruptResponse],
        tool_call: ToolCall | None = None,
        unique_names: bool = False,
        asked: Mapping[str, JSONValue] | None = None,
        taken: Collection[str] = (),
    ) -> None:
        """``taken``: names hooks asked at the same source (a tool call's policy asks
        ``approval`` there): the same name would be the same interrupt, so it is refused."""
        self.source_id = source_id
        self.tool_call = tool_call
        self._responses = responses
        self._asked = asked or {}
        self._unique_names = unique_names
        self._names: set[str] = set()
        self._taken = frozenset(taken)

    @property
    def names(self) -> frozenset[str]:
        """The names asked here so far."""
        return frozenset(self._names)

    def answered(self, name: str) -> bool:
        """Whether a human has answered interrupt ``name`` of this point."""
        return interrupt_id(self.source_id, name) in self._responses

    def shown(self, name: str) -> JSONValue:
        """The reason interrupt ``name`` was raised with, once it is answered; else None."""
        return self._asked.get(interrupt_id(self.source_id, name))

    def ask(
        self,
        name: str,
        reason: JSONValue = None,
        *,
        allowed_decisions: Sequence[DecisionType] = (),
        description: str | None = None,
        question: bool = False,
        options: Sequence[str] = (),
        tool_call: ToolCall | None = None,
    ) -> JSONValue:
        """Return the human's answer to ``name``; raise ``InterruptRequested`` if none yet.

        ``reason`` is kept as JSON (a datetime as its text, a tuple as a list), so the run's
        state is saved with it and reads the same in any process. ``tool_call``: the call
        the interrupt proposes, when not this point's own (an approver's edit, asked again)."""
        if not name:
            raise UsageError("an interrupt needs a name")
        if name in self._taken:
            raise UsageError(
                f"interrupt name {name!r} is taken by a hook on this call (the approval "
                "policy asks 'approval'); give the tool's own interrupt another name"
            )
        if self._unique_names and name in self._names:
            raise UsageError(
                f"interrupt name {name!r} was used twice on one event; give each a unique name"
            )
        self._names.add(name)
        iid = interrupt_id(self.source_id, name)
        answer = self._responses.get(iid)
        if answer is not None:
            return answer.value
        raise InterruptRequested(
            Interrupt(
                id=iid,
                name=name,
                reason=json_safe(reason),
                tool_call=tool_call or self.tool_call,
                allowed_decisions=tuple(allowed_decisions),
                description=description,
                question=question or bool(options),
                options=tuple(options),
            )
        )
