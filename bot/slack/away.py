"""``/signoff away until <date> [to @someone]`` and ``/signoff back``: while someone is
away, the requests posted ask their delegate in their place (the card says for whom).
Both are audited."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import date, datetime, time, timedelta

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.services import Services
from bot.services.ack_budget import ACK_BUDGET
from bot.ui.blocks import date_token, user_mention
from bot.ui.mrkdwn import code_span
from bot.ui.refusals import STORAGE_DOWN
from storage.audit import AuditEntry
from storage.away import Away
from storage.errors import StorageError

log = logging.getLogger(__name__)

_AWAY = re.compile(r"^away\s+until\s+(?P<day>\S+)(?:\s+to\s+(?P<who>\S+))?$")
_WHO = re.compile(
    r"^(?:<@(?P<escaped>[UW][A-Z0-9]{2,20})(?:\|[^>]*)?>|(?P<bare>[UW][A-Z0-9]{2,20}))$"
)
_LONGEST = timedelta(days=366)
NOTING = "Noting that takes a moment: nothing is noted yet; the answer follows here."
"""The ack when Slack or Redis is slow: Slack shows its own error past 3 seconds."""
USAGE = (
    "Use `/signoff away until YYYY-MM-DD to @someone` (the date is when you are back, in "
    "your time zone; `to @someone` is optional), and `/signoff back` when you are."
)


def is_away_command(text: str) -> bool:
    return text == "back" or text.split(" ", 1)[0] == "away"


async def answer_away(
    services: Services, user: str, text: str, ack: AsyncAck, respond: AsyncRespond
) -> None:
    """Answer ``/signoff away|back`` on the ack when it is noted within ``ACK_BUDGET``;
    else ack then, saying nothing is noted yet, and send what came of it through the
    command's ``response_url``."""
    noting = asyncio.ensure_future(_noted(services, user, text))
    done, _ = await asyncio.wait({noting}, timeout=ACK_BUDGET)
    if done:
        await ack(text=noting.result())
        return
    await ack(text=NOTING)
    services.background.spawn(_respond_once_noted(noting, respond), name=f"away {user}")


async def _noted(services: Services, user: str, text: str) -> str:
    try:
        return await away_command(services, user, text)
    except StorageError as exc:
        log.error("away of %s not noted: %s", user, exc)
        return STORAGE_DOWN


async def _respond_once_noted(noting: asyncio.Future[str], respond: AsyncRespond) -> None:
    await respond(text=await noting, response_type="ephemeral")


async def away_command(services: Services, user: str, text: str) -> str:
    """Note ``user`` away (or back) as ``text`` says; the reply says what was noted."""
    now = services.clock.now()
    if text == "back":
        if not await services.storage.away.clear(user):
            return "You were not marked away; nothing changed."
        await _audit(services, "back", user, now, "")
        return "Welcome back: requests posted from now on ask you again."
    match = _AWAY.match(text)
    if match is None:
        return USAGE
    try:
        day = date.fromisoformat(match["day"])
    except ValueError:
        return f"{code_span(match['day'], 20)} is not a date like YYYY-MM-DD. {USAGE}"
    who = _WHO.match(match["who"] or "") if match["who"] else None
    if match["who"] and who is None:
        return f"Name who decides for you as a mention, like `to @bob`. {USAGE}"
    delegate = (who["escaped"] or who["bare"]) if who else None
    if delegate == user:
        return "Your delegate must be someone else."
    zone = (await services.directory.zone(user)).zone()
    until = datetime.combine(day, time(0), tzinfo=zone)
    if until <= now:
        return "That date has passed: give the date you are back."
    if until - now > _LONGEST:
        return "You can be marked away for at most a year."
    await services.storage.away.set(Away(user=user, until=until, delegate=delegate))
    detail = f"until {until.isoformat()}" + (f" delegate {delegate}" if delegate else "")
    await _audit(services, "away", user, now, detail)
    instead = (
        f"requests posted from now until then ask {user_mention(delegate)} in your place"
        if delegate
        else "requests still ask you (add `to @someone` to name a delegate)"
    )
    return f"You are away until {date_token(until)}: {instead}. `/signoff back` ends it."


async def _audit(services: Services, event: str, user: str, at: datetime, detail: str) -> None:
    entry = AuditEntry(event=event, record_id="", run_id="", at=at, user_id=user, detail=detail)
    await services.storage.audit.append(entry)
