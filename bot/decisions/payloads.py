"""The parts of Slack interaction payloads the bot reads, validated at the trust boundary.

Only the signature (checked by Bolt) and ``user.id`` are trusted. The button value and a
modal's ``private_metadata`` are echoes of what the bot sent: they name an interrupt and
the digest of the arguments shown, and are looked up in storage, never believed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.ui import ids

_ID = r"^[A-Za-z0-9_.:\-]{1,128}$"
_TS = r"^[0-9]{1,12}\.[0-9]{1,8}$"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")


class _User(_Model):
    id: str = Field(pattern=r"^[UW][A-Z0-9]{2,20}$")


class _Container(_Model):
    channel_id: str = Field(pattern=_ID)
    message_ts: str = Field(pattern=_TS)
    thread_ts: str | None = Field(default=None, pattern=_TS)
    """The thread of a message clicked in one (Slack sends it, undocumented)."""


class _Option(_Model):
    value: str = Field(max_length=150)


class _Action(_Model):
    action_id: str = Field(max_length=255)
    block_id: str = Field(default="", max_length=255)
    value: str = Field(default="", max_length=2000)
    selected_option: _Option | None = None


class Ref(_Model):
    """An interrupt reference as the bot sent it: record id and the args digest shown, and,
    in a modal's, the message it was opened from (channel and ts)."""

    record_id: str
    digest: str
    opened_in: str = ""
    opened_at: str = ""

    @classmethod
    def parse(cls, value: str) -> Ref | None:
        record_id, _, rest = value.partition(" ")
        digest, _, origin = rest.partition(" ")
        opened_in, _, opened_at = origin.partition(" ")
        if not record_id or len(record_id) > 300 or len(digest) > 128 or len(origin) > 100:
            return None
        return cls(record_id=record_id, digest=digest, opened_in=opened_in, opened_at=opened_at)


def opened_from(value: str, channel: str | None, message_ts: str | None) -> str:
    """A modal's ``private_metadata``: its button's ``value`` and the message it was opened
    from, so its submission is checked as a click on that message (Slack echoes it back
    unchanged)."""
    return f"{value} {channel} {message_ts}" if channel and message_ts else value


class _InputValue(_Model):
    """One input's state: typed text, or what was picked (an option, options, a date)."""

    value: str | None = None
    selected_option: _Option | None = None
    selected_options: list[_Option] = []
    selected_date: str | None = None
    selected_date_time: int | None = None


class _State(_Model):
    values: dict[str, dict[str, _InputValue]] = {}


class Click(_Model):
    """A button click on one of the bot's messages."""

    user: _User
    container: _Container
    trigger_id: str = Field(max_length=255)
    actions: list[_Action] = Field(min_length=1, max_length=1)
    state: _State = _State()

    @property
    def action(self) -> _Action:
        return self.actions[0]

    @property
    def thread(self) -> str | None:
        """The thread the clicked message is a reply in, where the clicker reads it and a
        note to them is shown; None for a message read in its channel (a thread's parent
        too)."""
        ts = self.container.thread_ts
        return ts if ts and ts != self.container.message_ts else None

    @property
    def ticked(self) -> dict[int, set[int]]:
        """A batch card's checkbox groups as the clicker's own client shows them: the first
        item of each group the message state holds, and the items ticked in it."""
        groups: dict[int, set[int]] = {}
        for block_id, inputs in self.state.values.items():
            kind, _, first = block_id.partition(" ")
            if kind != ids.BATCH_BLOCK or not first.isdecimal() or len(first) > 3:
                continue
            picked = (o.value for box in inputs.values() for o in box.selected_options)
            groups[int(first)] = {int(v) for v in picked if v.isdecimal() and len(v) <= 3}
        return groups

    @property
    def ref(self) -> Ref | None:
        if self.action.action_id == ids.MORE:
            picked = self.action.selected_option
            verb, _, record_id = (picked.value if picked else "").partition(" ")
            return Ref.parse(record_id) if verb == ids.WITHDRAW else None
        if self.choice is not None:
            block, _, value = self.action.block_id.partition(" ")
            return Ref.parse(value) if block == ids.CHOICES_BLOCK else None
        return Ref.parse(self.action.value)

    @property
    def choice(self) -> int | None:
        """Which of a question's answers was picked (a button's or a select's index)."""
        action = self.action
        if action.action_id == ids.CHOOSE and action.selected_option is not None:
            picked = action.selected_option.value
        elif action.action_id.startswith(ids.CHOOSE + "."):
            picked = action.action_id.removeprefix(ids.CHOOSE + ".")
        else:
            return None
        # An index below the 10,000 answers a card's select offers (100 groups of 100).
        return int(picked) if picked.isdecimal() and len(picked) <= 4 else None


class _View(_Model):
    callback_id: str = Field(max_length=255)
    private_metadata: str = Field(max_length=3000)
    state: _State = _State()


class Submission(_Model):
    """A modal submission: who submitted, which interrupt, and the text they typed."""

    user: _User
    view: _View

    @property
    def ref(self) -> Ref | None:
        return Ref.parse(self.view.private_metadata)

    @property
    def values(self) -> dict[str, dict[str, dict[str, Any]]]:
        """Every input's state, as plain data (a generated form has one per argument)."""
        return {
            block: {action: state.model_dump() for action, state in inputs.items()}
            for block, inputs in self.view.state.values.items()
        }

    @property
    def text(self) -> str:
        block = self.view.state.values.get(ids.INPUT_BLOCK, {})
        value = block.get(ids.INPUT_ACTION)
        return (value.value if value else None) or ""


def parse_click(body: dict[str, Any]) -> Click | None:
    """The click in ``body``, or None when the payload is not a well-formed click."""
    try:
        return Click.model_validate(body)
    except ValidationError:
        return None


def parse_submission(body: dict[str, Any]) -> Submission | None:
    try:
        return Submission.model_validate(body)
    except ValidationError:
        return None
