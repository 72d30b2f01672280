"""The inspect -> delete -> report workflow the workflow tests ask about."""

from agent_runtime import InMemorySessionStore, NodeContext, Workflow


def cleanup(runs: list[str], store: InMemorySessionStore | None = None, **options) -> Workflow:
    """inspect -> delete -> report, with approval before delete; ``runs`` logs each node."""

    async def inspect(ctx: NodeContext) -> dict:
        runs.append("inspect")
        return {"path": ctx.input, "files": ["a.log", "b.log"]}

    async def delete(ctx: NodeContext) -> dict:
        runs.append("delete")
        return {"deleted": ctx.input["files"]}

    async def report(ctx: NodeContext) -> str:
        runs.append("report")
        return f"deleted {', '.join(ctx.input['deleted'])}"

    approval = {"delete": {"description": "Delete old log files"}}
    return Workflow(
        nodes={"inspect": inspect, "delete": delete, "report": report},
        session_store=store or InMemorySessionStore(),
        **{"interrupt_before": approval, **options},
    )
