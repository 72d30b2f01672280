"""A local stand-in for a Slack workspace, for demos and end-to-end tests of any Bolt app.

Public API: `Sandbox` (the server, in-process), `SandboxClient` (drives a running one
over HTTP), the seed types and `demo_workspace()`, `Timing`, the `Ack` an interaction
returns, and the errors.
"""

from .client import SandboxClient
from .config import (
    AppSeed,
    ChannelSeed,
    GroupSeed,
    Timing,
    UserSeed,
    WorkspaceSeed,
    demo_workspace,
    load_workspace,
)
from .delivery import Ack, Outbound
from .errors import SandboxError, SlackApiFailure, UserActionError
from .faults import Call, Faults
from .interactions import Interactions
from .server import Sandbox
from .workspace import Workspace

__all__ = [
    "Ack",
    "AppSeed",
    "Call",
    "ChannelSeed",
    "Faults",
    "GroupSeed",
    "Interactions",
    "Outbound",
    "Sandbox",
    "SandboxClient",
    "SandboxError",
    "SlackApiFailure",
    "Timing",
    "UserActionError",
    "UserSeed",
    "Workspace",
    "WorkspaceSeed",
    "demo_workspace",
    "load_workspace",
]
