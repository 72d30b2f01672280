"""A select's option groups within Slack's limits (100 groups of 100 options, labels of 75
characters) are taken, as Slack takes them; past them the blocks are invalid."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient


def grouped(groups: int, each: int, *, label: str = "g", plain: int = 0) -> list[Any]:
    def option(value: str) -> dict[str, Any]:
        return {"text": {"type": "plain_text", "text": value}, "value": value}

    select: dict[str, Any] = {
        "type": "static_select",
        "option_groups": [
            {
                "label": {"type": "plain_text", "text": label},
                "options": [option(f"v{g}-{n}") for n in range(each)],
            }
            for g in range(groups)
        ],
    }
    if plain:
        select["options"] = [option(f"p{n}") for n in range(plain)]
    return [{"type": "actions", "elements": [select]}]


def home(blocks: list[Any]) -> dict[str, Any]:
    return {"type": "home", "blocks": blocks}


async def test_a_hundred_groups_of_a_hundred_options_are_taken(client: AsyncWebClient) -> None:
    view = home(grouped(100, 100, label="x" * 75))
    assert (await client.views_publish(user_id="U0ALICE", view=view))["ok"]


@pytest.mark.parametrize(
    "blocks",
    [
        grouped(101, 1),
        grouped(1, 101),
        grouped(1, 1, label="x" * 76),
        grouped(1, 1, label=""),
        grouped(1, 1, plain=1),
    ],
    ids=["101 groups", "101 in a group", "long label", "empty label", "options and groups"],
)
async def test_option_groups_past_slacks_limits_are_invalid_blocks(
    client: AsyncWebClient, blocks: list[Any]
) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.views_publish(user_id="U0ALICE", view=home(blocks))
    assert caught.value.response["error"] == "invalid_blocks"
