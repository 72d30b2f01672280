"""The on-call cleanup workflow: inspect, then (after two on-call approvals) delete stale
volumes, then report. The cloud is simulated: nothing outside this process is touched."""

from __future__ import annotations

from dataclasses import dataclass

from agent_runtime import NodeContext, SessionStore, ToolCall, Workflow
from agent_runtime.messages import JSONValue

REGION = "eu-west-1"
STALE_AFTER_DAYS = 14


@dataclass(frozen=True, kw_only=True)
class Volume:
    """A simulated disk volume."""

    id: str
    size_gb: int
    attached: bool
    idle_days: int


FLEET = (
    Volume(id="vol-0a41c9e2", size_gb=200, attached=False, idle_days=41),
    Volume(id="vol-07be1d55", size_gb=120, attached=False, idle_days=19),
    Volume(id="vol-0c9d3f10", size_gb=500, attached=True, idle_days=0),
    Volume(id="vol-03e6a7b4", size_gb=100, attached=False, idle_days=33),
)


async def inspect(ctx: NodeContext) -> JSONValue:
    """Find unattached volumes idle for more than two weeks."""
    stale = [v for v in FLEET if not v.attached and v.idle_days > STALE_AFTER_DAYS]
    return {
        "region": REGION,
        "volumes": [v.id for v in stale],
        "size_gb": sum(v.size_gb for v in stale),
    }


async def delete_volumes(ctx: NodeContext) -> JSONValue:
    """Delete the volumes in the input (simulated)."""
    args = ctx.input if isinstance(ctx.input, dict) else {}
    return {
        "region": args.get("region"),
        "deleted": args.get("volumes"),
        "size_gb": args.get("size_gb"),
    }


async def report(ctx: NodeContext) -> JSONValue:
    """Say what was done, for the run's thread."""
    done = ctx.input if isinstance(ctx.input, dict) else {}
    volumes = list(done.get("deleted") or [])
    return (
        f"Deleted {len(volumes)} stale volume(s) in {done.get('region')} "
        f"({', '.join(volumes)}), freeing {done.get('size_gb')} GB."
    )


def _describe(call: ToolCall) -> str:
    count = len(call.args.get("volumes") or [])
    return (
        f"Delete {count} unattached volume(s), {call.args.get('size_gb')} GB "
        f"in {call.args.get('region')} (needs two on-call approvals)"
    )


def oncall_cleanup(store: SessionStore) -> Workflow:
    """The workflow over the bot's session store."""
    return Workflow(
        nodes={"inspect": inspect, "delete_volumes": delete_volumes, "report": report},
        interrupt_before={"delete_volumes": {"description": _describe}},
        session_store=store,
        name="oncall-cleanup",
    )
