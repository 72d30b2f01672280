"""Preconditions: what a guarded tool call will act on, read when the approver is asked
and again before the call runs. An approval binds to what was shown: if the answer has
changed since, the call does not run and the approvers are asked again, with the change.
An edit binds the same way: the answer for the edited call must be what was shown.

A precondition takes the call and returns JSON (sync or async): for a cleanup, the files
or volumes it would delete, with their sizes. A list is compared item by item, an object
key by key; anything else as a whole.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable

from .messages import JSONValue, ToolCall
from .results import json_safe

Precondition = Callable[[ToolCall], JSONValue | Awaitable[JSONValue]]


async def evaluate(precondition: Precondition, call: ToolCall) -> JSONValue:
    """The precondition's answer for ``call`` now, as the JSON a checkpoint keeps (a tuple
    as a list, a datetime as its text): so it is saved, and compares equal to itself read
    back from the card it was shown on."""
    answer = precondition(call)
    if inspect.isawaitable(answer):
        answer = await answer
    return json_safe(answer)


def changes(before: JSONValue, now: JSONValue) -> dict[str, JSONValue]:
    """What changed from ``before`` to ``now``: the items ``added`` and ``removed`` (a list's
    elements, an object's ``key: value`` entries), or the whole ``before`` and ``now``."""
    if isinstance(before, list) and isinstance(now, list):
        was, is_ = [_key(v) for v in before], [_key(v) for v in now]
        return {
            "added": [v for v, k in zip(now, is_, strict=True) if k not in was],
            "removed": [v for v, k in zip(before, was, strict=True) if k not in is_],
        }
    if isinstance(before, dict) and isinstance(now, dict):
        return {
            "added": [{k: v} for k, v in now.items() if k not in before or before[k] != v],
            "removed": [{k: v} for k, v in before.items() if k not in now or now[k] != v],
        }
    return {"before": before, "now": now}


def _key(value: JSONValue) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
