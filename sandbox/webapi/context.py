"""What a Web API method may touch while it runs."""

from __future__ import annotations

from dataclasses import dataclass

from ..socket_mode import SocketModeHub
from ..triggers import Triggers
from ..workspace import Workspace


@dataclass(frozen=True, kw_only=True)
class ApiContext:
    """The workspace and services behind one Web API request; `origin` is the sandbox's URL."""

    workspace: Workspace
    triggers: Triggers
    hub: SocketModeHub
    origin: str
