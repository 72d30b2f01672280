"""Decision to gate: how soon a waiting ``signoff gate`` process learns an approval.

Real processes on loopback: an embedded Redis, the local Slack sandbox, ``signoff serve``
and 200 ``signoff gate --json`` processes (in rounds of 20). Each request is approved in
the sandbox; a gate is unblocked when its decision reaches its stdout. The baseline, in
the same run: a client polling ``GET /api/requests/{id}`` every 3 seconds (what the best
peers do), from a random phase, sees the same decisions. Latency counts from the
decision's time as stored (when the approver's click was acknowledged).

Prints a table and, as its last line, one JSON object with every figure.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
from datetime import datetime
from typing import Any

import aiohttp

from bench.usage import usage
from bot.ui import ids
from sandbox import Sandbox
from sandbox.entities import Message

from .chaos_stack import ALICE as APPROVER
from .chaos_stack import CHANNEL, SIGNOFF, Stack, stack

REQUESTS, ROUND = 200, 20
POLL_EVERY = 3.0
TARGET_P99 = 0.100


async def main() -> dict[str, Any]:
    async with stack() as running:
        return await _measure(running)


async def _measure(running: Stack) -> dict[str, Any]:
    made = await asyncio.create_subprocess_exec(
        str(SIGNOFF),
        *("token", "create", "bench"),
        env=running.env(0),
        stdout=asyncio.subprocess.PIPE,
    )
    printed, _ = await made.communicate()
    token = printed.decode().splitlines()[0].removeprefix("SIGNOFF_TOKEN=")
    port = await running.serve()
    base = f"http://127.0.0.1:{port}"
    env = running.env(port) | {"SIGNOFF_URL": base, "SIGNOFF_TOKEN": token}
    gate_ms: list[float] = []
    poll_ms: list[float] = []
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:
        for first in range(0, REQUESTS, ROUND):
            await _round(running.sandbox, env, http, base, first, gate_ms, poll_ms)
    return _figures(gate_ms, poll_ms)


async def _round(
    sandbox: Sandbox,
    env: dict[str, str],
    http: aiohttp.ClientSession,
    base: str,
    first: int,
    gate_ms: list[float],
    poll_ms: list[float],
) -> None:
    """Start a round of gates, approve each in turn once it waits, time both observers."""
    titles = [f"Bench request {n:03d}" for n in range(first, first + ROUND)]
    gates = [await _gate(env, title) for title in titles]
    cards = await _cards(sandbox, titles)
    polls = []
    for title, gate in zip(titles, gates, strict=True):
        request_id = await _request_id(gate)
        polls.append(asyncio.create_task(_poll(http, base, request_id)))
        ack = await sandbox.interactions.click(
            APPROVER, channel=CHANNEL, message_ts=cards[title].ts, action_id=ids.APPROVE
        )
        assert ack.status == "acked", ack
        assert gate.stdout is not None
        line = await asyncio.wait_for(gate.stdout.readline(), 30)
        unblocked = time.time()
        view = json.loads(line)
        assert view["status"] == "approved", view
        gate_ms.append((unblocked - _at(view["decided_at"])) * 1000)
        assert await gate.wait() == 0
    for seen in await asyncio.gather(*polls):
        poll_ms.append(seen)


async def _gate(env: dict[str, str], title: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        str(SIGNOFF),
        *("gate", "--json", "--channel", CHANNEL, "--approvers", APPROVER, "--title", title),
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _request_id(gate: asyncio.subprocess.Process) -> str:
    """The id the gate names while it waits."""
    assert gate.stderr is not None
    while line := (await asyncio.wait_for(gate.stderr.readline(), 30)).decode():
        if "waiting for approval" in line:
            return line.split("request ", 1)[1].split()[0]
    raise AssertionError("the gate ended before it waited")


async def _cards(sandbox: Sandbox, titles: list[str]) -> dict[str, Message]:
    ws = sandbox.workspace

    def found() -> dict[str, Message] | None:
        cards = {t: m for m in ws.history(CHANNEL) for t in titles if t in str(m.blocks)}
        return cards if len(cards) == len(titles) else None

    cards = await sandbox.wait_for(found, within=60)
    assert cards is not None
    return cards


async def _poll(http: aiohttp.ClientSession, base: str, request_id: str) -> float:
    """A 3-second polling client: when (ms after the decision) it sees the request decided."""
    await asyncio.sleep(random.uniform(0, POLL_EVERY))  # its phase: any moment of the period
    while True:
        async with http.get(f"{base}/api/requests/{request_id}") as answer:
            view = await answer.json()
        if view["status"] != "pending":
            return (time.time() - _at(view["decided_at"])) * 1000
        await asyncio.sleep(POLL_EVERY)  # the baseline under measure polls, by design


def _figures(gate_ms: list[float], poll_ms: list[float]) -> dict[str, Any]:
    def pct(values: list[float], p: float) -> float:
        ordered = sorted(values)
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1)

    figures = {
        "requests": len(gate_ms),
        "gate_p50_ms": pct(gate_ms, 0.50),
        "gate_p99_ms": pct(gate_ms, 0.99),
        "gate_max_ms": round(max(gate_ms), 1),
        "poll3s_p50_ms": pct(poll_ms, 0.50),
        "poll3s_p99_ms": pct(poll_ms, 0.99),
    }
    figures["p99_times_better"] = round(figures["poll3s_p99_ms"] / figures["gate_p99_ms"], 1)
    figures["target_p99_met"] = figures["gate_p99_ms"] < TARGET_P99 * 1000
    return figures


def _at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def _print(figures: dict[str, Any]) -> None:
    print(f"Decision to an unblocked `signoff gate`, {figures['requests']} requests")
    print(f"{'observer':<34}{'p50 ms':>10}{'p99 ms':>10}")
    gate = "signoff gate (long-poll)"
    print(f"{gate:<34}{figures['gate_p50_ms']:>10}{figures['gate_p99_ms']:>10}")
    poll = "client polling every 3 s"
    print(f"{poll:<34}{figures['poll3s_p50_ms']:>10}{figures['poll3s_p99_ms']:>10}")
    met = "met" if figures["target_p99_met"] else "NOT met"
    print(f"p99 {figures['p99_times_better']}x better; target p99 < 100 ms {met}")
    print(json.dumps(figures))


if __name__ == "__main__":
    usage("bench.gate", __doc__).parse_args(sys.argv[1:])
    _print(asyncio.run(main()))
