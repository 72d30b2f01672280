"""Seed data and settings for one sandbox workspace: who is in it and how it behaves."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import TypeAdapter, ValidationError

from .errors import SandboxError


@dataclass(frozen=True, kw_only=True)
class UserSeed:
    """A human member of the workspace; `tz` is an IANA zone name, as Slack reports it."""

    id: str
    name: str
    real_name: str
    tz: str = "UTC"
    tz_label: str | None = None


@dataclass(frozen=True, kw_only=True)
class GroupSeed:
    """A user group (`<!subteam^ID>`), e.g. the on-call approvers."""

    id: str
    handle: str
    name: str
    users: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class ChannelSeed:
    """A public channel; `bot_member` says whether the app's bot user has joined it."""

    id: str
    name: str
    members: tuple[str, ...]
    bot_member: bool = True


@dataclass(frozen=True, kw_only=True)
class AppSeed:
    """The one installed app: its ids, credentials and slash commands."""

    app_id: str = "A0SIGNOFF"
    bot_id: str = "B0SIGNOFF"
    bot_user_id: str = "U0SIGNOFF"
    bot_name: str = "signoff"
    bot_token: str = "xoxb-sandbox-bot-token"
    app_token: str = "xapp-sandbox-app-token"
    signing_secret: str = "sandbox-signing-secret"
    commands: tuple[str, ...] = ("/signoff", "/approvals")
    escaped_commands: tuple[str, ...] = ("/signoff",)
    """The commands whose manifest entry says `should_escape: true` (as Signoff's does):
    Slack sends their typed `@name`s and `#channel`s as escaped ids."""


@dataclass(frozen=True, kw_only=True)
class WorkspaceSeed:
    """Everything a fresh workspace starts with."""

    team_id: str = "T0SANDBOX"
    team_domain: str = "signoff-sandbox"
    team_name: str = "Signoff Sandbox"
    app: AppSeed = field(default_factory=AppSeed)
    users: tuple[UserSeed, ...] = ()
    groups: tuple[GroupSeed, ...] = ()
    channels: tuple[ChannelSeed, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Timing:
    """Slack's clocks; tests may shorten them, the defaults are Slack's own."""

    ack_timeout: float = 3.0
    trigger_ttl: float = 3.0
    response_url_ttl: float = 30 * 60
    response_url_uses: int = 5
    # Slack retries a failed event nearly at once, after a minute and after five minutes.
    event_retry_delays: tuple[float, ...] = (1.0, 60.0, 300.0)


def load_workspace(text: str) -> WorkspaceSeed:
    """Parse a workspace seed from JSON (same fields as `WorkspaceSeed`), checking references."""
    try:
        seed = TypeAdapter(WorkspaceSeed).validate_json(text)
    except ValidationError as exc:
        raise SandboxError(f"invalid workspace seed: {exc}") from exc
    check_seed(seed)
    return seed


def check_seed(seed: WorkspaceSeed) -> None:
    """Every group and channel member must be a seeded user; ids must be unique; escaped
    commands must be commands."""
    users = {u.id for u in seed.users}
    if len(users) != len(seed.users):
        raise SandboxError("workspace seed: two users share an id")
    for owner, members in [(g.id, g.users) for g in seed.groups] + [
        (c.id, c.members) for c in seed.channels
    ]:
        unknown = sorted(set(members) - users)
        if unknown:
            raise SandboxError(f"workspace seed: {owner} lists unknown users {unknown}")
    not_commands = sorted(set(seed.app.escaped_commands) - set(seed.app.commands))
    if not_commands:
        raise SandboxError(f"workspace seed: escaped_commands has non-commands {not_commands}")


def demo_workspace() -> WorkspaceSeed:
    """A small team spread over four time zones, an on-call group and three channels."""
    users = (
        UserSeed(id="U0ALICE", name="alice", real_name="Alice Moreau", tz="Europe/Paris"),
        UserSeed(id="U0BOB", name="bob", real_name="Bob Okafor", tz="America/New_York"),
        UserSeed(id="U0CAROL", name="carol", real_name="Carol Tanaka", tz="Asia/Tokyo"),
        UserSeed(id="U0DAVE", name="dave", real_name="Dave Lindqvist", tz="America/Los_Angeles"),
    )
    everyone = tuple(u.id for u in users)
    return WorkspaceSeed(
        users=users,
        groups=(
            GroupSeed(
                id="S0ONCALL",
                handle="oncall",
                name="On-call",
                users=("U0ALICE", "U0BOB", "U0CAROL"),
            ),
        ),
        channels=(
            ChannelSeed(id="C0OPS", name="ops", members=everyone),
            ChannelSeed(id="C0GENERAL", name="general", members=everyone),
            ChannelSeed(id="C0RANDOM", name="random", members=everyone, bot_member=False),
        ),
    )
