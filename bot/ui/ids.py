"""Every action, block and callback id the bot sends to Slack, in one place.

Slack echoes these back on a click; they route the click and carry nothing else. The
button ``value`` is the interrupt id, the only part of a click the bot uses.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "signoff"

APPROVE: Final = f"{PREFIX}.approve"
TRUST: Final = f"{PREFIX}.trust"
DENY: Final = f"{PREFIX}.deny"
EDIT: Final = f"{PREFIX}.edit"
REPLY: Final = f"{PREFIX}.reply"
FULL_ARGS: Final = f"{PREFIX}.args"
OPEN_PENDING: Final = f"{PREFIX}.open"
NEXT_PAGE: Final = f"{PREFIX}.next_page"
HOME_OPEN_PAGE: Final = f"{PREFIX}.home.open_page"
"""App Home's next page of the requests open to the viewer's channels; the value is the
storage cursor."""
REVOKE_TRUST: Final = f"{PREFIX}.revoke_trust"
HOME_APPROVE: Final = f"{PREFIX}.home.approve"
HOME_DENY: Final = f"{PREFIX}.home.deny"
"""Approve and Deny beside a request in App Home; the value is the card's (id and digest)."""

MORE: Final = f"{PREFIX}.more"
"""The card's overflow menu; its one option's value is ``withdraw <record id>``, the id
as ``refs.short_ref`` carries it in an option's 150 characters."""
WITHDRAW: Final = "withdraw"

UNDO: Final = f"{PREFIX}.undo"
"""Undo a decision still in its undo window; the value is the card's (id and digest)."""

BATCH_APPROVE: Final = f"{PREFIX}.batch.approve"
"""A batch card's "Approve selected": the ticked items approved, the others excluded."""
BATCH_DENY: Final = f"{PREFIX}.batch.deny"
BATCH_PICK: Final = f"{PREFIX}.batch.pick"
"""A batch card's checkbox groups: ``signoff.batch.pick.<first item>``; a tick is only
read when "Approve selected" is clicked (from the click's own message state)."""
BATCH_BLOCK: Final = f"{PREFIX}.batch"

BUTTONS: Final = (APPROVE, TRUST, DENY, EDIT, REPLY, FULL_ARGS, MORE, UNDO)
BATCH_BUTTONS: Final = (BATCH_APPROVE, BATCH_DENY)

CHOOSE: Final = f"{PREFIX}.choose"
"""A question's answers: ``signoff.choose.<n>`` buttons, or one select whose options'
values are the indexes; the interrupt reference is in the block id (a long record id as
``refs.short_ref`` carries it)."""

ACTIONS_BLOCK: Final = f"{PREFIX}.decide"
CHOICES_BLOCK: Final = f"{PREFIX}.choices"

# Modal callbacks, and the one input each modal reads back.
EDIT_VIEW: Final = f"{PREFIX}.edit_view"
DENY_VIEW: Final = f"{PREFIX}.deny_view"
REPLY_VIEW: Final = f"{PREFIX}.reply_view"
ARGS_VIEW: Final = f"{PREFIX}.args_view"
INPUT_BLOCK: Final = "input"
INPUT_ACTION: Final = "text"
