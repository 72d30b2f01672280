"""The ``/signoff`` command, mentions of the bot, and the App Home tab."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.agents.policy import AgentSpec
from bot.decisions.from_home import decide_from_home
from bot.decisions.trust_grants import revoke_trust
from bot.errors import AgentBuildError, BotError
from bot.runs.drive import start_run, unknown_agent
from bot.runs.place import Place
from bot.services import Services
from bot.services.ack_budget import ACK_BUDGET
from bot.ui.blocks import escaped, is_user_id
from bot.ui.home import publish_home, redraw_homes, show_home
from bot.ui.home_place import FIRST_PAGES, HomePlace
from bot.ui.listing import (
    PAGE_SIZE,
    Shown,
    help_text,
    page_cursor,
    pending_blocks,
    waiting_text,
)
from bot.ui.mrkdwn import as_typed
from bot.ui.notes import post_in_thread
from bot.ui.posting import post_ephemeral
from bot.ui.refusals import LIST_DOWN, STORAGE_DOWN
from storage.errors import InvalidIdError, StorageError
from storage.outcomes import Page

from .away import answer_away, is_away_command

log = logging.getLogger(__name__)

_RUN = re.compile(r"^\s*run\s+(?P<agent>[A-Za-z0-9_.\-]+)\s*(?P<input>.*)$", re.S)
_OPENING_MENTIONS = re.compile(r"^(?:\s*<@[UW][A-Z0-9]+(?:\|[^>]*)?>)+")
"""The mentions a message to the bot opens with (``<@U0BOT> run ...``): dropped; those in
the input after them (a colleague to tell) are the run's, kept as typed."""


def command_listener(services: Services) -> Any:
    async def on_command(ack: AsyncAck, respond: AsyncRespond, body: dict[str, Any]) -> None:
        text = str(body.get("text") or "").strip()
        user, channel = str(body.get("user_id", "")), str(body.get("channel_id", ""))
        match = _RUN.match(text)
        spec = services.registry.spec(match["agent"]) if match else None
        if text == "help":
            await ack(text=help_text())
        elif is_away_command(text):
            await answer_away(services, user, text, ack, respond)
        elif match and spec is None:
            await ack(text=unknown_agent(services, match["agent"]))
        elif spec and not spec.starts_freely(user) and not spec.starter_groups:
            await ack(text=not_a_starter(spec))
        elif match:
            # Group membership needs a rate-limited Slack call: checked after the ack.
            await ack(text=f"Starting {match['agent']}…")
            place = Place(channel=channel, thread_ts=None, requested_by=user)
            prompt = as_typed(match["input"])
            services.background.spawn(
                _start(services, match["agent"], prompt, place), name="slash run"
            )
        elif text.split()[:1] == ["run"]:
            known = ", ".join(f"`{name}`" for name in services.registry.names) or "none"
            await ack(
                text=f"Name the agent to run: `/signoff run <agent> <input>` (known: {known})."
            )
        elif text:
            await ack(text=f"`/signoff {escaped(text)}` is not a Signoff command.\n" + help_text())
        else:
            # The list rides on the ack (one Redis read), so no response_url call is needed;
            # a Redis slow to answer gets the note in time, before Slack shows its error.
            reading = services.storage.queries.pending_for_user(user, limit=PAGE_SIZE)
            try:
                page = await asyncio.wait_for(reading, ACK_BUDGET)
            except (StorageError, TimeoutError) as exc:
                log.error("pending list for %s not read: %r", user, exc)
                await ack(text=LIST_DOWN)
                return
            text, blocks = _listing(services, user, page)
            await ack(text=text, blocks=blocks)

    return on_command


def mention_listener(services: Services) -> Any:
    async def on_mention(body: dict[str, Any]) -> None:
        event = body.get("event") or {}
        text = _OPENING_MENTIONS.sub("", str(event.get("text") or "")).strip()
        match = _RUN.match(text)
        place = Place(
            channel=str(event.get("channel") or ""),
            thread_ts=str(event.get("thread_ts") or event.get("ts") or "") or None,
            requested_by=str(event.get("user") or "unknown"),
        )
        event_id = str(body.get("event_id") or "")
        # Notes only the author sees go where they wrote: a thread Slack names, else the
        # channel (one in a thread nobody opened yet would not be shown).
        thread = str(event.get("thread_ts") or "") or None
        if not match:  # asked something else: told, only them, how to start a run
            services.background.spawn(
                _hint_once(services, event_id, place, thread=thread),
                name=f"mention hint {event_id}",
            )
            return
        prompt = as_typed(match["input"])
        services.background.spawn(
            _start_once(services, event_id, match["agent"], prompt, place, thread=thread),
            name=f"mention run {event_id}",
        )

    return on_mention


def home_listener(services: Services) -> Any:
    """The listener of ``app_home_opened``: Home drawn when its tab is opened. Slack sends
    the event for the Messages tab too (the app's DMs), where Home is not seen: that one
    neither costs a draw nor resets the pages its viewer turned to."""

    async def on_home(body: dict[str, Any]) -> None:
        event = body.get("event") or {}
        user = str(event.get("user") or "")
        if user and event.get("tab") != "messages":
            services.background.spawn(_open_home(services, user), name=f"home {user}")

    return on_home


def page_listener(services: Services) -> Any:
    """The Bolt action listener of the list's "Next page" button, in a message or App Home,
    and of App Home's next page of the requests open to the viewer's channels (the pages
    Home shows are stored, so redraws keep them)."""

    async def on_next_page(ack: AsyncAck, body: dict[str, Any], respond: AsyncRespond) -> None:
        await ack()
        # After the ack (Slack waits on this listener): Redis and Slack may be slow.
        turn = _turn_page(services, body, respond)
        services.background.spawn(turn, name="next page")

    return on_next_page


async def _turn_page(services: Services, body: dict[str, Any], respond: AsyncRespond) -> None:
    """Show the page a "Next page" click asks for, in Home or in the listing's message."""
    user = str((body.get("user") or {}).get("id") or "")
    actions = body.get("actions") or [{}]
    value = str(actions[0].get("value") or "")
    try:
        if (body.get("view") or {}).get("type") == "home":
            await publish_home(services, user, HomePlace.parse(value), stored=None)
            return
        if not body.get("response_url"):  # Slack sends one with every message's click
            log.warning("ignored a next page click by %s without a response_url", user)
            return
        cursor = page_cursor(value)
        queries = services.storage.queries
        page = await queries.pending_for_user(user, limit=PAGE_SIZE, cursor=cursor)
    except StorageError as exc:
        log.error("next page for %s not read: %s", user, exc)
        return
    text, blocks = _listing(services, user, page)
    await respond(text=text, blocks=blocks, replace_original=True)


def _listing(services: Services, user: str, page: Page) -> tuple[str, list[dict[str, Any]]]:
    """The text and blocks of one page of what waits for ``user``."""
    shown = Shown.of(page)
    blocks = pending_blocks(
        page.records,
        viewer=user,
        now=services.clock.now(),
        next_page=page.next_cursor,
        shown=shown,
    )
    return waiting_text(page.records, shown=shown), blocks


async def _start_once(
    services: Services, event_id: str, agent: str, prompt: str, place: Place, *, thread: str | None
) -> None:
    """Start the run a mention asks for, unless Slack is retrying a delivery already handled.

    A retry carries the same ``event_id``; without one there is nothing to compare. When
    Redis cannot say, nothing starts (it would store nothing) and the author is told so.
    """
    first = await _first_delivery(services, event_id)
    if first is None:
        await _tell_author(services, place, STORAGE_DOWN, thread=thread)
    if first:
        await _start(services, agent, prompt, place, thread=thread)


async def _first_delivery(services: Services, event_id: str) -> bool | None:
    """Whether this is the first delivery of ``event_id``; None when Redis cannot say."""
    if not event_id:
        return True
    try:
        return await services.storage.deliveries.first(event_id)
    except StorageError as exc:
        log.error("event %s: not known whether Slack delivered it before: %s", event_id, exc)
        return None


async def _hint_once(
    services: Services, event_id: str, place: Place, *, thread: str | None
) -> None:
    """Tell who mentioned the bot without ``run <agent>`` how to start a run, once (or, when
    Redis cannot say whether this is a retry, at the risk of twice)."""
    if not place.channel or await _first_delivery(services, event_id) is False:
        return
    names = ", ".join(f"`{n}`" for n in services.registry.names) or "none are loaded"
    text = (
        f"To start a run, mention me with `run <agent> <input>` (agents: {names}); "
        "`/signoff help` shows the rest."
    )
    await _tell_author(services, place, text, thread=thread)


async def _tell_author(services: Services, place: Place, text: str, *, thread: str | None) -> None:
    """Tell who asked for a run something only they see, in ``thread`` when they wrote in one
    (nothing without a channel to say it in)."""
    if place.channel:
        user, where = place.requested_by, place.channel
        await post_ephemeral(services, channel=where, user=user, text=text, thread_ts=thread)


def not_a_starter(spec: AgentSpec) -> str:
    """Why the caller may not start ``spec``."""
    who = ", ".join(f"<!subteam^{s}>" if s.startswith("S") else f"<@{s}>" for s in spec.started_by)
    return f"You may not start {spec.name}; it can be started by {who}."


async def _may_start(services: Services, agent: str, user: str) -> bool:
    spec = services.registry.spec(agent)
    if spec is None or spec.starts_freely(user):
        return True
    return user in await services.directory.members(spec.starter_groups)


async def _start(
    services: Services, agent: str, prompt: str, place: Place, *, thread: str | None = None
) -> None:
    spec = services.registry.spec(agent)
    if spec is not None and not await _may_start(services, agent, place.requested_by):
        await _tell_author(services, place, not_a_starter(spec), thread=thread)
        return
    try:
        await start_run(services, agent, prompt, place=place)
    except BotError as exc:
        await post_in_thread(
            services, channel=place.channel, thread_ts=place.thread_ts, text=str(exc)
        )
    except Exception as exc:  # the agent failed: said in Slack, or "Starting…" is the last word
        log.exception("run of %s failed", agent)
        why = str(exc) if isinstance(exc, AgentBuildError) else type(exc).__name__
        await post_in_thread(
            services,
            channel=place.channel,
            thread_ts=place.thread_ts,
            text=f"The run of {agent} failed ({why}); see the bot's log.",
            mention=f"<@{place.requested_by}>",
        )


async def _open_home(services: Services, user: str) -> None:
    """Draw Home for ``user``, each list from its first page, and remember they look at it
    (it is redrawn on decisions, on the pages they turned to)."""
    try:
        await services.storage.home.opened(user, services.clock.now())  # on first pages
        await publish_home(services, user, FIRST_PAGES, stored=FIRST_PAGES)
    except (StorageError, InvalidIdError) as exc:
        log.warning("Home for %s not drawn: %s", user, exc)


def revoke_listener(services: Services) -> Any:
    """The Bolt action listener of Home's Revoke button: the granter or an admin ends a
    trust grant; their Home (and the granter's) is redrawn without it, or says why not."""

    async def on_revoke(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        user = str((body.get("user") or {}).get("id") or "")
        actions = body.get("actions") or [{}]
        grant_id = str(actions[0].get("value") or "")
        # After the ack (Slack waits on this listener): Redis and Slack may be slow.
        services.background.spawn(_revoke(services, grant_id, by=user), name=f"revoke {grant_id}")

    return on_revoke


async def _revoke(services: Services, grant_id: str, *, by: str) -> None:
    """End trust grant ``grant_id`` for ``by`` and redraw the Homes it showed in."""
    try:
        revoked = await revoke_trust(services, grant_id, by=by)
        if isinstance(revoked, str):
            log.info("trust %s not revoked by %s: %s", grant_id, by, revoked)
            await show_home(services, by, notice=revoked)
            return
        await show_home(services, by)
        if revoked.granted_by != by:  # an admin's: the granter's Home drops it too
            await redraw_homes(services, [revoked.granted_by], after=f"revoke of {grant_id}")
    except (StorageError, InvalidIdError) as exc:
        log.error("trust %s not revoked: %s", grant_id, exc)


def home_decision_listener(services: Services) -> Any:
    """The Bolt action listener of Approve and Deny beside a request in App Home."""

    async def on_decide(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        user = str((body.get("user") or {}).get("id") or "")
        action = (body.get("actions") or [{}])[0]
        if not is_user_id(user) or not isinstance(action, dict):
            log.warning("ignored a malformed Home decision")
            return
        # After the ack (Slack waits on this listener), at once: Deny's trigger_id lasts 3 s.
        decision = decide_from_home(
            services,
            user=user,
            action_id=str(action.get("action_id") or ""),
            value=str(action.get("value") or "")[:500],
            trigger_id=str(body.get("trigger_id") or ""),
        )
        services.background.spawn(decision, name=f"home decision {user}")

    return on_decide
