"""What is waiting for a user: the ``/signoff`` reply and the App Home tab show the same list."""

from __future__ import annotations

from storage.records import InterruptRecord

from . import ids
from .blocks import MODAL_BLOCKS, Block, context, date_token, escaped, header, section

_PER_ITEM = 2


def pending_blocks(records: tuple[InterruptRecord, ...] | list[InterruptRecord]) -> list[Block]:
    """A header, then per interrupt its summary and a link to its message."""
    blocks: list[Block] = [header(f"Waiting for you: {len(records)}")]
    if not records:
        blocks.append(section("Nothing is waiting for your decision."))
        return blocks
    room = (MODAL_BLOCKS - 2) // _PER_ITEM
    for record in list(records)[:room]:
        interrupt = record.runtime_interrupt
        action = interrupt.tool_call.name if interrupt.tool_call else interrupt.name
        summary = f"*{escaped(record.agent, 200)}* wants to run `{escaped(action, 300)}`"
        block = section(summary)
        link = _permalink(record)
        if link:
            block["accessory"] = {
                "type": "button",
                "action_id": ids.OPEN_PENDING,
                "text": {"type": "plain_text", "text": "Open"},
                "url": link,
                "value": record.id,
            }
        blocks.append(block)
        parts = [f"Since {date_token(record.created_at)}"]
        if record.expires_at:
            parts.append(f"expires {date_token(record.expires_at)}")
        blocks.append(context(parts))
    if len(records) > room:
        blocks.append(context([f"and {len(records) - room} more"]))
    return blocks


def help_text() -> str:
    return (
        "*Signoff* asks for approval before agents act.\n"
        "• `/signoff` lists the requests waiting for you.\n"
        "• `/signoff run <agent> <input>` starts a run of an agent.\n"
        "• `/signoff help` shows this."
    )


def _permalink(record: InterruptRecord) -> str | None:
    if not record.channel or not record.message_ts:
        return None
    return f"https://slack.com/archives/{record.channel}/p{record.message_ts.replace('.', '')}"
