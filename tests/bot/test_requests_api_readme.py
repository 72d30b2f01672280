"""The README's requests API section names each field every endpoint takes, under that
endpoint, and the statuses a request's view can have, as the OpenAPI document gives them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from bot.api.openapi import openapi_document

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
SECTION = README.split("**The requests API**", 1)[1].split("**Webhooks**", 1)[0]
SCHEMAS: dict[str, Any] = openapi_document()["components"]["schemas"]


def _bullet(endpoint: str) -> str:
    """The README's bullet on ``endpoint`` (its opening words), up to the next bullet."""
    start = SECTION.index(f"\n- `{endpoint}")
    end = SECTION.find("\n- `", start + 1)
    return SECTION[start : end if end != -1 else len(SECTION)]


def _named(text: str) -> set[str]:
    return set(re.findall(r"`([a-z][a-z_]*)`", text))


def _fields(*schemas: str) -> set[str]:
    return {name for schema in schemas for name in SCHEMAS[schema]["properties"]}


def test_each_endpoint_bullet_names_every_field_its_body_takes() -> None:
    bullets = {
        "POST /api/requests`": ("NewRequest", "Param", "LadderStep"),
        "POST /api/requests/{id}/start": ("JobStart",),
        "POST /api/requests/{id}/withdraw": ("Withdrawal", "OutcomeReport"),
    }
    for endpoint, schemas in bullets.items():
        missing = _fields(*schemas) - _named(_bullet(endpoint))
        assert (endpoint, sorted(missing)) == (endpoint, [])


def test_the_statuses_the_readme_lists_are_those_a_view_can_have() -> None:
    listed = re.search(r"Its `status` is (.+?), or `lost`", SECTION, re.DOTALL)
    assert listed is not None
    statuses = _named(listed.group(1)) | {"lost"}
    assert statuses == set(SCHEMAS["RequestView"]["properties"]["status"]["enum"])
