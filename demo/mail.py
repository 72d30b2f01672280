"""The email agent: drafts a message and sends it once a person approves, possibly after
editing it. An edit is checked against the tool's schema before it is accepted, so a bad
address is shown as an error in the Edit form. Sending is simulated: nothing leaves here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agent_runtime import Agent, Message, SessionStore, Tool, ToolCall

from .model import ConversationScript, last_tool_result

Address = Annotated[
    str,
    StringConstraints(strip_whitespace=True, pattern=r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"),
    Field(json_schema_extra={"format": "email"}),  # the Edit form says what is expected
]


class Email(BaseModel):
    """The send_email arguments: what the model drafts and an approver may edit."""

    model_config = ConfigDict(extra="forbid")

    to: list[Address] = Field(min_length=1, max_length=10)
    subject: str = Field(min_length=1, max_length=120)
    body: str = Field(min_length=1, max_length=5000)


def send(to: list[str], subject: str, body: str) -> str:
    """Send an email (simulated)."""
    return f"sent {subject!r} to {', '.join(to)} ({len(body)} characters)"


DRAFT = {
    "to": ["team@example.com"],
    "subject": "Weekly ops summary",
    "body": "Hi all,\n\nNo incidents this week; two stale volumes were cleaned up.\n\nThe ops bot",
}


def _summary(messages: Sequence[Message]) -> str:
    result, is_error = last_tool_result(messages)
    return f"Not sent: {result}" if is_error else f"Done: {result}."


def email_agent(store: SessionStore) -> Agent:
    """The agent over the bot's session store."""
    send_email = Tool(send, name="send_email", input_model=Email)
    return Agent(
        model=ConversationScript([[ToolCall(name="send_email", args=DRAFT)], _summary]),
        tools=[send_email],
        interrupt_on={
            "send_email": {
                "allowed_decisions": ("approve", "edit", "reject"),
                "description": "Send this email (edit it first if it needs changes)",
            }
        },
        session_store=store,
        system_prompt="You draft and send short emails for the ops team.",
        name="email",
    )
