"""An argument whose schema is an enum of strings or of integers, in the Edit form: a
select of every allowed value (in option groups past Slack's 100 options), or, when Slack
cannot list them all, a text input; either way only an allowed value is read back, as the
schema has it (an integer, not its text)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_runtime.messages import JSONValue

from .blocks import Block, plain_text
from .mrkdwn import plain
from .option_texts import option_texts

OPTIONS = 100
"""The most options a select holds, the most option groups, and the most in one group."""
OPTION_TEXT = 75
OPTION_VALUE = 150
"""Slack refuses a form with a longer option value: such a choice is typed instead."""
GROUP_LABEL = 75

Choice = str | int
"""One allowed value of an enum a form offers: an option's value is its text."""


def choices_of(enum: object) -> tuple[Choice, ...]:
    """An enum's values, each once, when a form can offer them: all non-empty strings, or
    all integers; else none (the argument is edited as its type says)."""
    if not isinstance(enum, list) or not enum:
        return ()
    texts = all(isinstance(v, str) and v for v in enum)
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in enum)
    return tuple(dict.fromkeys(enum)) if texts or integers else ()


def listable(values: Sequence[Choice]) -> bool:
    """Whether one select can offer every one of ``values``: each fits an option's value,
    and they fit 100 groups of 100."""
    return len(values) <= OPTIONS * OPTIONS and all(len(str(v)) <= OPTION_VALUE for v in values)


def select(values: Sequence[Choice], current: JSONValue) -> dict[str, Any]:
    """A static select of ``values`` (grouped by hundreds past 100), ``current`` picked
    when it is one of them (the value itself: ``"1"`` or ``True`` is not the integer 1)."""
    texts = [str(v) for v in values]
    shown = option_texts(texts, OPTION_TEXT)
    options = [
        {"text": plain_text(s, OPTION_TEXT), "value": t} for s, t in zip(shown, texts, strict=True)
    ]
    element: dict[str, Any] = {"type": "static_select", **option_list(options)}
    same = [n for n, v in enumerate(values) if type(v) is type(current) and v == current]
    if same:
        element["initial_option"] = options[same[0]]
    return element


def option_list(options: Sequence[Block]) -> dict[str, list[Block]]:
    """A static select's ``options`` (an Edit form's, or a question card's answers) as
    Slack takes them: as they are up to 100, else in ``option_groups`` of 100 (at most
    100 groups, so 10,000 options)."""
    if len(options) <= OPTIONS:
        return {"options": list(options)}
    return {
        "option_groups": [_group(options[n : n + OPTIONS]) for n in range(0, len(options), OPTIONS)]
    }


def typed_hint(values: Sequence[Choice]) -> str:
    """What a text input that stands for a choice of ``values`` takes."""
    return f"One of {len(values)} allowed values, typed exactly, such as {_examples(values)}."


def allowed(values: Sequence[Choice], given: object, *, typed: bool) -> Choice:
    """The allowed value ``given`` (a picked option's value, or typed text with the spaces
    around it aside) stands for, as the schema has it; ValueError with a sentence when it
    is none of them."""
    texts = [str(v) for v in values]
    if isinstance(given, str):
        for candidate in (given, given.strip()) if typed else (given,):
            if candidate in texts:
                return values[texts.index(candidate)]
    if typed:
        raise ValueError(
            f"This is not one of the {len(values)} allowed values, typed exactly,"
            f" such as {_examples(values)}."
        )
    raise ValueError("This is not one of the allowed values: pick one from the list.")


def _group(options: Sequence[Block]) -> Block:
    """An option group labelled with its first and last options, to find one by."""
    first, last = options[0]["text"]["text"], options[-1]["text"]["text"]
    label = f"{plain(first, 35)} to {plain(last, 35)}"
    return {"label": plain_text(label, GROUP_LABEL), "options": options}


def _examples(values: Sequence[Choice]) -> str:
    return " or ".join(f"“{plain(str(v), 40)}”" for v in values[:2])
