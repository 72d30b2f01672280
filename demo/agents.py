"""The demo's agents and who may approve them, in the sandbox's demo workspace.

The users, the ``@oncall`` group and ``#ops`` named here are the ones
``sandbox.demo_workspace()`` seeds (``check_workspace`` makes sure). The file-cleanup and
email agents let the person who asked approve too, so one person can try the whole loop
alone; the on-call workflow needs two other members of ``@oncall``. The email card also
offers "Approve and trust" for an hour, so a grant shows (and can be revoked) in App Home.
"""

from __future__ import annotations

from pathlib import Path

from agent_runtime import Remember
from bot.agents.policy import AgentSpec, Policy
from bot.errors import PolicyError
from sandbox import WorkspaceSeed

from .files import file_cleanup
from .mail import email_agent
from .oncall import oncall_cleanup

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"
ONCALL = "S0ONCALL"
OPS = "C0OPS"
TRUST_MINUTES = 60
"""How long "Approve and trust" on the email card lets the same email go out unasked."""


def demo_agents(data_dir: Path) -> list[AgentSpec]:
    """The three demo agents; file-cleanup works in ``data_dir/scratch``."""
    return [
        AgentSpec(
            name="file-cleanup",
            build=file_cleanup(data_dir / "scratch"),
            description="Deletes files older than 5 days from its scratch directory",
            policy=Policy(users=(ALICE, BOB), self_approval=True, dangerous=True),
        ),
        AgentSpec(
            name="oncall-cleanup",
            build=oncall_cleanup,
            description="Inspects volumes, deletes the stale ones after two approvals, reports",
            policy=Policy(
                channel=OPS,
                groups=(ONCALL,),
                min_approvals=2,
                decisions=("approve", "reject"),
                dangerous=True,
            ),
        ),
        AgentSpec(
            name="email",
            build=email_agent,
            description="Drafts the weekly ops email; edit it before it is sent",
            policy=Policy(
                users=(ALICE, BOB, CAROL, DAVE),
                self_approval=True,
                trust=Remember(scope="minutes", minutes=TRUST_MINUTES, same_args=True),
            ),
        ),
    ]


def check_workspace(specs: list[AgentSpec], seed: WorkspaceSeed) -> None:
    """Fail at startup if a policy names a user, group or channel the workspace lacks."""
    users = {u.id for u in seed.users}
    groups = {g.id for g in seed.groups}
    channels = {c.id for c in seed.channels}
    for spec in specs:
        for policy in (spec.policy, *spec.tools.values()):
            missing = (
                (set(policy.users) - users)
                | (set(policy.groups) - groups)
                | ({policy.channel} - channels if policy.channel else set())
            )
            if missing:
                raise PolicyError(f"agent {spec.name}: the workspace has no {sorted(missing)}")
