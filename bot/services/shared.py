"""Everything the bot's handlers, workers and scheduler share, built once per process."""

from __future__ import annotations

from dataclasses import dataclass, field

from slack_sdk.web.async_client import AsyncWebClient

from bot.agents.registry import Registry
from storage import Storage

from .background import Background
from .callbacks import CallbackPolicy
from .clock import Clock
from .directory import Directory
from .due_soon import DueSoon
from .limits import ApiLimits
from .metrics import Metrics
from .outage import Outage


@dataclass(frozen=True, kw_only=True)
class Services:
    """The bot's collaborators: Slack client, storage, agents, clock and background work."""

    client: AsyncWebClient
    storage: Storage
    registry: Registry
    directory: Directory
    clock: Clock
    background: Background
    metrics: Metrics
    default_channel: str | None = None
    admins: tuple[str, ...] = ()
    """Users who may withdraw anyone's pending request (``SIGNOFF_ADMINS``)."""
    callbacks: CallbackPolicy = field(default_factory=CallbackPolicy)
    """Where webhooks may go (``SIGNOFF_WEBHOOK_ALLOW``): checked when a request names a
    URL, and on every address a delivery connects to."""
    limits: ApiLimits = field(default_factory=ApiLimits)
    """What one API client may hold at once (``SIGNOFF_API_OPEN_CALLS``,
    ``SIGNOFF_API_PENDING_REQUESTS``)."""
    due_soon: DueSoon = field(default_factory=DueSoon)
    """Wakes the scheduler when an interrupt created in this process falls due sooner."""
    outage: Outage = field(default_factory=Outage)
    """Reports Redis failing the background loops, once for all of them."""
    unrecorded_posts: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Cards Slack took whose record Redis failed to update, by record id (an escalation
    step's: "<id> step <n>"): (channel, ts). The outbox's next try records that card
    instead of posting a second one."""
    stopped_loops: set[str] = field(default_factory=set)
    """Background loops that ended on an unexpected error: ``/healthz`` fails while any
    has, so the process is seen as broken instead of running on without them."""
