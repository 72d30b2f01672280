"""A message with one Approve button, as the sandbox's Web API tests post it."""

from __future__ import annotations

from typing import Any

BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*Delete* 3 files?"}},
    {
        "type": "actions",
        "block_id": "decide",
        "elements": [
            {
                "type": "button",
                "action_id": "approve",
                "value": "int-1",
                "style": "primary",
                "text": {"type": "plain_text", "text": "Approve"},
            },
        ],
    },
]
