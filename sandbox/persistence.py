"""A workspace kept in a JSON file, so a restarted sandbox shows what Slack would still show.

Saved: direct-message channels, the channels the app was invited to, every message and
thread reply, and Home tabs. Not saved:
ephemerals, open modals and client notices, which Slack also loses with the client session.
The file is rewritten (atomically) after every change.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from .entities import JsonObject, Message
from .errors import SandboxError
from .workspace import Workspace

log = logging.getLogger(__name__)


class SavedWorkspace(BaseModel):
    """The file's shape; read back through validation, since anyone may edit it."""

    model_config = ConfigDict(extra="forbid")

    format: int = 1
    dms: dict[str, str] = {}
    """DM channel id to the user it is with."""
    group_dms: dict[str, list[str]] = {}
    """Group DM channel id to its people (the bot aside)."""
    bot_channels: list[str] = []
    """The public channels the app's bot is a member of (``/invite`` adds to them)."""
    messages: list[Message] = []
    homes: dict[str, JsonObject] = {}
    """User id to the Home tab view the app last published for them."""


def saved(workspace: Workspace) -> SavedWorkspace:
    """What of `workspace` outlives a restart."""
    homes = {uid: view.spec for uid in workspace.users if (view := workspace.home(uid))}
    return SavedWorkspace(
        dms={c.id: c.im_user for c in workspace.channels.values() if c.im_user},
        group_dms={
            c.id: sorted(u for u in c.members if u != workspace.app.bot_user_id)
            for c in workspace.channels.values()
            if c.is_mpim
        },
        bot_channels=sorted(
            c.id
            for c in workspace.channels.values()
            if not (c.is_im or c.is_mpim) and workspace.app.bot_user_id in c.members
        ),
        messages=sorted(workspace.all_messages(), key=lambda m: float(m.ts)),
        homes=homes,
    )


def restore(workspace: Workspace, state: SavedWorkspace) -> None:
    """Put a saved state back into a freshly seeded `workspace`; unknown ids are dropped."""
    for channel_id, user_id in state.dms.items():
        if user_id in workspace.users:
            workspace.open_dm(user_id, channel_id=channel_id)
    for channel_id, people in state.group_dms.items():
        if all(user_id in workspace.users for user_id in people):
            workspace.open_group_dm(people, channel_id=channel_id)
    for channel_id in state.bot_channels:
        channel = workspace.channels.get(channel_id)
        if channel is not None and not (channel.is_im or channel.is_mpim):
            workspace.add_bot(channel_id)
    for message in state.messages:
        if message.channel in workspace.channels:
            workspace.post(message)
    for user_id, spec in state.homes.items():
        if user_id in workspace.users:
            workspace.publish_home(user_id, spec)


class StateFile:
    """Loads a workspace from `path` and keeps the file up to date while `run()` runs."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self, workspace: Workspace) -> None:
        """Restore the saved workspace, if there is one."""
        if not self.path.exists():
            return
        try:
            state = SavedWorkspace.model_validate_json(self.path.read_bytes())
        except ValidationError as exc:
            raise SandboxError(
                f"{self.path} is not a saved sandbox workspace ({exc.error_count()} errors); "
                "move it away to start afresh"
            ) from exc
        restore(workspace, state)
        log.info("restored %d messages from %s", len(state.messages), self.path)

    def save(self, workspace: Workspace) -> None:
        """Write the workspace now: a temporary file renamed over the old one."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(saved(workspace).model_dump_json())
        os.replace(temporary, self.path)

    async def run(self, workspace: Workspace) -> None:
        """Save after every change until cancelled."""
        version = workspace.version
        while True:
            changed = await workspace.next_version(version, within=3600.0)
            if changed != version:
                version = changed
                self.save(workspace)
