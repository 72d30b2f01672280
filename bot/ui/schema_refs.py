"""Local references in a tool's JSON schema, followed: pydantic writes an ``Enum`` argument
as ``{"$ref": "#/$defs/Color"}``, and the Edit form must see the enum it points to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote


def resolved(node: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with its ``$ref`` into ``root`` (``#/$defs/...``, ``#/definitions/...``, or a
    lone ``allOf`` wrapping one) followed, its own keys over the target's. A remote, broken
    or circular reference is left in place, so the form shows that argument as JSON."""
    seen: set[str] = set()
    while True:
        wrapped = node.get("allOf")
        if isinstance(wrapped, list) and len(wrapped) == 1 and isinstance(wrapped[0], Mapping):
            node = {**wrapped[0], **{k: v for k, v in node.items() if k != "allOf"}}
        ref = node.get("$ref")
        if not isinstance(ref, str) or ref in seen:
            return node
        target = _pointed(root, ref)
        if target is None:
            return node
        seen.add(ref)
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _pointed(root: Mapping[str, Any], ref: str) -> Mapping[str, Any] | None:
    """The schema a local JSON pointer (``#/...``) names in ``root``; None for any other."""
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        key = unquote(part).replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, Mapping) else None
