"""An argument whose schema is an enum of strings, in the Edit form: a select of every
allowed value (in option groups past Slack's 100 options), or, when Slack cannot list
them all, a text input; either way only an allowed value is read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_runtime.messages import JSONValue

from .blocks import Block, plain_text
from .mrkdwn import plain

OPTIONS = 100
"""The most options a select holds, the most option groups, and the most in one group."""
OPTION_TEXT = 75
OPTION_VALUE = 150
"""Slack refuses a form with a longer option value: such a choice is typed instead."""
GROUP_LABEL = 75


def listable(values: Sequence[str]) -> bool:
    """Whether one select can offer every one of ``values``: each fits an option's value,
    and they fit 100 groups of 100."""
    return len(values) <= OPTIONS * OPTIONS and all(len(v) <= OPTION_VALUE for v in values)


def select(values: Sequence[str], current: JSONValue) -> dict[str, Any]:
    """A static select of ``values`` (grouped by hundreds past 100), ``current`` picked
    when it is one of them."""
    options = [{"text": plain_text(v, OPTION_TEXT), "value": v} for v in values]
    element: dict[str, Any] = {"type": "static_select"}
    if len(options) <= OPTIONS:
        element["options"] = options
    else:
        element["option_groups"] = [
            _group(options[n : n + OPTIONS]) for n in range(0, len(options), OPTIONS)
        ]
    if isinstance(current, str) and current in values:
        element["initial_option"] = options[values.index(current)]
    return element


def typed_hint(values: Sequence[str]) -> str:
    """What a text input that stands for a choice of ``values`` takes."""
    return f"One of {len(values)} allowed values, typed exactly, such as {_examples(values)}."


def allowed(values: Sequence[str], given: object, *, typed: bool) -> str:
    """The allowed value ``given`` (a picked option's value, or typed text with the spaces
    around it aside) stands for, as the schema spells it; ValueError with a sentence when
    it is none of them."""
    if isinstance(given, str):
        for candidate in (given, given.strip()) if typed else (given,):
            if candidate in values:
                return values[values.index(candidate)]
    if typed:
        raise ValueError(
            f"This is not one of the {len(values)} allowed values, typed exactly,"
            f" such as {_examples(values)}."
        )
    raise ValueError("This is not one of the allowed values: pick one from the list.")


def _group(options: list[Block]) -> Block:
    """An option group labelled with its first and last values, to find one by."""
    first, last = options[0]["value"], options[-1]["value"]
    label = f"{plain(first, 35)} to {plain(last, 35)}"
    return {"label": plain_text(label, GROUP_LABEL), "options": options}


def _examples(values: Sequence[str]) -> str:
    return " or ".join(f"“{plain(v, 40)}”" for v in values[:2])
