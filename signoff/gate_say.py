"""What ``signoff gate`` says on stderr: where its request waits, how it progresses, how it
was decided, and why Signoff refused it."""

from __future__ import annotations

import contextlib
import re
import sys

from bot.api.schemas import APPROVED_STATUSES, NewRequest, RequestView

from .client import RequestRefused
from .gate_cli import DENIED, EXPIRED, LOST, WITHDRAWN, as_typed

_AS_ON_THE_CARD = {"edited": "approved with edits", "responded": "replied"}
"""How the card's headline names these statuses, so the job's log says the same."""


def verdict(view: RequestView) -> int | None:
    """None when the command may run, else the exit status saying why not."""
    if view.approved:
        # A quorum's approvers all, as the card names them; else who made it final.
        deciders = view.approvals if len(view.approvals) > 1 else [view.decided_by]
        who = ", ".join(_person(view, user) for user in deciders if user)
        what = _AS_ON_THE_CARD.get(view.status, view.status)
        say(f"signoff gate: {what} by {who or 'default: nobody decided in time'}")
        if left_out := [i.item for i in view.items if i.status not in APPROVED_STATUSES]:
            kept = f"{len(view.items) - len(left_out)} of {len(view.items)} items approved"
            say(f"signoff gate: {kept}; left out: {', '.join(left_out)}")
        return None
    by = f" by {_person(view, view.decided_by)}" if view.decided_by else ""
    reason = f": {view.reason}" if view.reason else ""
    say(f"signoff gate: {view.status}{by}{reason}")
    codes = {
        "denied": DENIED,
        "expired": EXPIRED,
        "pending": EXPIRED,
        "withdrawn": WITHDRAWN,
        "lost": LOST,
    }
    return codes.get(view.status, DENIED)


class Progress:
    """One line on stderr for each change while the gate waits."""

    def __init__(self, view: RequestView) -> None:
        self._last = view

    def update(self, view: RequestView) -> None:
        before, self._last = self._last, view
        if view.permalink and not before.permalink and not view.final:  # said not in Slack
            say(f"signoff gate: its card is posted now: {view.permalink}")
        if view.reminders_sent > before.reminders_sent:
            say(f"signoff gate: reminder {view.reminders_sent} sent to the approvers")
        self._escalation(before, view)
        # A vote that decided (or holds the decision) is told by the line saying so.
        decisive = view.final or view.held_until is not None
        if len(view.approvals) > len(before.approvals) and not decisive:
            say(f"signoff gate: {len(view.approvals)} of {view.min_approvals} approvals")
        if view.held_until is not None and view.held_until != before.held_until:
            when = view.held_until.isoformat()
            who = _person(view, view.held_by or "?")
            say(f"signoff gate: decided by {who}; final at {when} unless undone")
        if before.held_until is not None and view.held_until is None and not view.final:
            say("signoff gate: the decision was undone; waiting for a decision again")

    @staticmethod
    def _escalation(before: RequestView, view: RequestView) -> None:
        """It escalated; its escalation card is not in Slack (and why), or is now."""
        escalating, refused = view.escalated and not before.escalated, view.escalation_not_posted
        if refused and (escalating or refused != before.escalation_not_posted):
            opening = "not decided in time; escalated, but " if escalating else ""
            hint = _channel_hint(refused, view.escalation_channel)
            say(
                f"signoff gate: {opening}the escalation card is not in Slack yet (Slack "
                f"answered {refused}), and Signoff keeps trying{hint}"
            )
        elif escalating:
            say("signoff gate: not decided in time; escalated")
        elif before.escalation_not_posted and not refused and not view.final:
            say(f"signoff gate: the escalation card is posted in {view.escalation_channel}")


def say_waiting(view: RequestView, *, now: float) -> None:
    """Where the request waits, for whom, and until when (``now`` by the server's clock)."""
    who = ", ".join(
        [_person(view, user) for user in view.approvers]
        + (["anyone in the channel"] if view.anyone_in_channel or not view.approvers else [])
    )
    many = f"{view.min_approvals} of " if view.min_approvals > 1 else ""
    if view.permalink:
        say(f"signoff gate: request {view.id} waiting for approval: {view.permalink}")
    else:
        answered = f" (Slack answered {view.not_posted})" if view.not_posted else ""
        hint = _channel_hint(view.not_posted, view.channel)
        say(
            f"signoff gate: request {view.id} waiting for approval; its card is not in "
            f"Slack yet{answered}, and Signoff keeps trying{hint}"
        )
    say(f"signoff gate: who may decide: {many}{who}")
    if view.expires_at is not None:
        left = max(0, int(view.expires_at.timestamp() - now))
        say(f"signoff gate: expires in {_span(left)} ({view.expires_at.isoformat()})")


def _channel_hint(refused: str | None, channel: str | None) -> str:
    """The likely fix when Slack refused a card for its channel: the app invited, or, for
    one Slack does not know (or hides from the app), the channel id checked too."""
    if refused == "not_in_channel":
        return f" (is the app a member of {channel}?)"
    if refused == "channel_not_found":
        return f" (is {channel} the channel's id, and the app a member of it?)"
    return ""


def _person(view: RequestView, user_id: str) -> str:
    """``alice (U0ALICE)`` where Slack told the name, else the id as it is."""
    name = view.names.get(user_id)
    return f"{name} ({user_id})" if name else user_id


def refusal(exc: RequestRefused, request: NewRequest) -> str:
    """Why Signoff refused ``request``; a 400 (bad input) told by the options that set the
    field it names, with the item sent when one of a list's (``approvers.0``) was wrong."""
    if exc.status != 400:
        return exc.message
    if exc.field is None:
        return as_typed(None, exc.message)
    name, _, index = exc.field.partition(".")
    sent = None
    with contextlib.suppress(TypeError, ValueError, IndexError):
        sent = getattr(request, name, ())[int(index)]
    return as_typed(exc.field, exc.message.removeprefix(f"{exc.field}: "), sent)


def say(text: str) -> None:
    """One line on stderr. What it quotes (a reason, a title) came from people and jobs:
    a control character in it is written escaped, so it cannot start a line of its own
    that reads as the gate's, nor a bidirectional control, so it cannot read reversed."""
    print(_CONTROL.sub(_escaped, text), file=sys.stderr, flush=True)


_CONTROL = re.compile(
    r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029"
    r"\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidirectional ("Trojan Source")
)


def json_line(view: RequestView) -> str:
    """``view`` as one line of JSON, for ``--json``: what ``say`` escapes is written as a
    JSON escape, the same value to a parser and inert on a terminal showing the line."""
    return _CONTROL.sub(lambda c: f"\\u{ord(c.group()):04x}", view.model_dump_json())


def _escaped(control: re.Match[str]) -> str:
    return control.group().encode("unicode_escape").decode("ascii")


def _span(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    return f"{hours} h {rest // 60} min" if hours else f"{rest // 60} min {rest % 60} s"
