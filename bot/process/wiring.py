"""A process's services, opened from its settings: the Slack client, the storage
connection and the agents, wired together once and closed on exit."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from slack_sdk.web.async_client import AsyncWebClient

from bot.agents.policy import AgentSpec
from bot.agents.registry import Registry, load_specs
from bot.errors import BotError
from bot.services import Services
from bot.services.background import Background
from bot.services.callbacks import CallbackPolicy
from bot.services.clock import Clock, SystemClock
from bot.services.directory import Directory
from bot.services.limits import ApiLimits
from bot.services.metrics import Metrics
from storage import Retention, Storage, connect

from .settings import Settings
from .slack_client import close_client, make_client
from .slack_tokens import check_tokens


@contextlib.asynccontextmanager
async def open_services(
    settings: Settings,
    *,
    agents: str | None = None,
    specs: Sequence[AgentSpec] | None = None,
    socket_mode: bool = False,
) -> AsyncIterator[Services]:
    """Services from ``settings``: the agents of ``specs``, else of the module ``agents`` (or
    SIGNOFF_AGENTS); the Slack client and storage connection are closed on exit. The bot
    token (and with ``socket_mode`` the app token) is checked with Slack first."""
    if settings.bot_token is None:
        raise BotError("SLACK_BOT_TOKEN: not set; copy the bot token (xoxb-...) from the app")
    if specs is None:
        module = agents or settings.agents
        named_by = "--agents" if agents else "SIGNOFF_AGENTS"
        # Without agents, Signoff serves requests from jobs (`signoff gate`, the API) only.
        specs = load_specs(module, named_by=named_by) if module else []
    await check_tokens(settings, socket_mode=socket_mode)
    client = make_client(settings)
    try:
        storage = await connect_storage(settings)
    except BaseException:
        await close_client(client)
        raise
    services = make_services(
        client=client,
        storage=storage,
        specs=specs,
        default_channel=settings.channel,
        admins=settings.admin_ids,
        callbacks=CallbackPolicy(allow=settings.webhook_hosts),
        limits=ApiLimits(
            open_calls=settings.api_open_calls, pending_requests=settings.api_pending_requests
        ),
    )
    try:
        yield services
    finally:
        await services.registry.aclose()
        await close_client(client)
        await storage.close()


async def connect_storage(settings: Settings) -> Storage:
    """Storage as the settings say: where Redis is, the key prefix, how much audit to keep."""
    data_dir = Path(settings.data_dir) if settings.data_dir else None
    url = settings.redis_url.get_secret_value() if settings.redis_url else None
    return await connect(
        url,
        prefix=settings.redis_prefix,
        data_dir=data_dir,
        retention=Retention(audit_entries=settings.audit_entries),
    )


def make_services(
    *,
    client: AsyncWebClient,
    storage: Storage,
    specs: Sequence[AgentSpec],
    clock: Clock | None = None,
    default_channel: str | None = None,
    admins: tuple[str, ...] = (),
    callbacks: CallbackPolicy | None = None,
    limits: ApiLimits | None = None,
) -> Services:
    """Wire the bot's collaborators together."""
    the_clock = clock or SystemClock()
    return Services(
        client=client,
        storage=storage,
        registry=Registry(specs, sessions=storage.sessions),
        directory=Directory(client, clock=the_clock),
        clock=the_clock,
        background=Background(),
        metrics=Metrics(),
        default_channel=default_channel,
        admins=admins,
        callbacks=callbacks or CallbackPolicy(),
        limits=limits or ApiLimits(),
    )
