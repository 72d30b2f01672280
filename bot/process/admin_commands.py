"""``signoff audit`` and ``signoff token``: the commands that work on storage alone, with
no Slack: the audit trail printed, and the requests API's named clients managed."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import re
import sys
from datetime import UTC, datetime

from agent_runtime.shown_urls import shown_url
from bot.services.callbacks import CallbackPolicy
from storage import Storage

from .settings import Settings
from .wiring import connect_storage


async def audit_command(
    settings: Settings, args: argparse.Namespace, stopping: asyncio.Event
) -> int:
    """Every transition storage kept (who, what, when, where), one JSON object a line."""
    storage = await connect_storage(settings)
    _say_which_redis(storage)
    printed = 0
    try:
        after = "-"
        while page := await storage.audit.read(after=after, count=500, since=args.since):
            for entry in page:
                wanted = args.run is None or entry.run_id == args.run
                if wanted and (args.user is None or entry.user_id == args.user):
                    row = {**dataclasses.asdict(entry), "at": entry.at.isoformat()}
                    print(json.dumps(row), flush=True)
                    printed += 1
            after = page[-1].ref or after
    finally:
        await storage.close()
    if not printed and args.user is not None and not re.fullmatch(r"[UW][A-Z0-9]+", args.user):
        print(
            f"signoff: no entries by {args.user!r}: the trail names Slack users by id "
            "(U0123ABCD, in the person's profile under More), and jobs by their name",
            file=sys.stderr,
        )
    return 0


_TOKEN_ALLOW_SETTING = (
    "SIGNOFF_WEBHOOK_ALLOW, both for this command and for every Signoff process (serve, "
    "socket, worker), which check the URL again"
)
"""This command checks a client's URL against its own setting, not the server's."""


async def token_command(
    settings: Settings, args: argparse.Namespace, stopping: asyncio.Event
) -> int:
    """Named API clients: the token (and webhook secret) are printed once, at creation."""
    storage = await connect_storage(settings)
    _say_which_redis(storage)
    try:
        clients = storage.api_clients
        if args.action == "create":
            channels = tuple(c.strip() for c in (args.channels or "").split(",") if c.strip())
            if args.channels is not None and not channels:  # an unset variable, say
                print(
                    "signoff: --channels names no channel: give its ids (C0123ABCD), or leave "
                    "--channels out for a client that may post to any channel",
                    file=sys.stderr,
                )
                return 2
            url = args.callback_url
            policy = CallbackPolicy(allow=settings.webhook_hosts, setting=_TOKEN_ALLOW_SETTING)
            refused = policy.refusal(url) if url else None
            if refused is not None:
                print(f"signoff: --callback-url: {refused}", file=sys.stderr)
                return 2
            try:
                client, token = await clients.create(
                    args.name, channels=channels, callback_url=url, now=datetime.now(UTC)
                )
            except ValueError as exc:
                print(f"signoff: {exc}", file=sys.stderr)
                return 2
            print(f"SIGNOFF_TOKEN={token}")
            print(f"webhook secret: {client.webhook_secret}")
            print("Keep both now: Signoff stores only the token's hash.", file=sys.stderr)
        elif args.action == "revoke":
            if not await clients.revoke(args.name):
                print(f"signoff: no client named {args.name!r}", file=sys.stderr)
                return 1
            print(f"revoked {args.name}")
        else:
            listed = await clients.all()
            pending = await storage.requests.pending([client.name for client in listed])
            for client in listed:
                where = ",".join(client.channels) or "any channel"
                made = client.created_at.isoformat() if client.created_at else "?"
                held = f"{pending[client.name]} of {settings.api_pending_requests} pending"
                # As the logs show it: a query may hold a secret (``?token=``).
                hook = (
                    f"\twebhooks to {shown_url(client.callback_url)}" if client.callback_url else ""
                )
                print(f"{client.name}\t{where}\t{made}\t{held}{hook}")
    finally:
        await storage.close()
    return 0


def _say_which_redis(storage: Storage) -> None:
    """Without ``REDIS_URL`` a command works on an embedded server's data of its own: say
    whose, since the bot (or the demo, which prints its ``REDIS_URL``) may keep another."""
    if storage.embedded is not None:
        print(
            f"signoff: no REDIS_URL: using the embedded Redis in {storage.embedded.data_dir} "
            "(set REDIS_URL to the bot's Redis; the demo prints its own)",
            file=sys.stderr,
        )
