"""The bot under test, as tests drive it: users, the cleanup agent, and the ``Harness``
that sends signed requests to one running bot process and reads the fake Slack."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from fakes import (
    FakeSlack,
    ManualClock,
    OneToolModel,
    click_payload,
    command_body,
    event_body,
    form_body,
    sign,
    submit_payload,
)

from agent_runtime import Agent, DecisionType, Tool, tool
from agent_runtime.policy import ApprovalOptions
from agent_runtime.session import SessionStore
from bot.agents.policy import AgentSpec, Policy
from bot.process.loops import Loops
from bot.runs.drive import start_run
from bot.runs.place import Place
from bot.services import Services
from bot.slack.events import EVENTS_PATH
from bot.ui.ids import APPROVE, BATCH_BLOCK, DENY_VIEW, EDIT_VIEW, REPLY_VIEW

CHANNEL = "C0OPS"
DECIDED_BY_MODAL = {
    "edit": (EDIT_VIEW, '{"paths": ["/tmp/a"]}'),
    "reject": (DENY_VIEW, "not today"),
    "respond": (REPLY_VIEW, "done by hand"),
}
ALICE, BOB, CAROL, MALLORY = "U0ALICE", "U0BOB", "U0CAROL", "U0MALLORY"


@dataclass
class ToolLog:
    """Every call of the guarded tool, so tests can say it ran once, or never."""

    calls: list[dict[str, Any]] = field(default_factory=list)


def cleanup_spec(
    log: ToolLog,
    policy: Policy,
    *,
    then: tuple[dict[str, Any], ...] = (),
    started_by: tuple[str, ...] = (),
    decisions: tuple[DecisionType, ...] | None = None,
) -> AgentSpec:
    """The cleanup agent: one guarded ``delete_files`` call, then one per entry of ``then``;
    ``decisions`` narrows what its approvers may answer (default: all of them)."""

    @tool
    def delete_files(paths: list[str]) -> str:
        """Delete the given files."""
        log.calls.append({"paths": paths})
        return f"deleted {len(paths)} file(s)"

    asked: bool | ApprovalOptions = (
        {"allowed_decisions": list(decisions)} if decisions is not None else True
    )

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": ["/tmp/a", "/tmp/b"]}, then=then),
            tools=[delete_files],
            interrupt_on={"delete_files": asked},
            session_store=store,
            name="cleanup",
        )

    return AgentSpec(name="cleanup", build=build, policy=policy, started_by=started_by)


def one_delete_spec(delete_files: Tool, policy: Policy, **options: Any) -> AgentSpec:
    """The cleanup agent on the given ``delete_files``: one guarded call of it on ``/tmp/a``;
    ``options`` go to its ``Agent``."""

    def build(store: SessionStore) -> Agent:
        return Agent(
            model=OneToolModel("delete_files", {"paths": ["/tmp/a"]}),
            tools=[delete_files],
            interrupt_on={"delete_files": True},
            session_store=store,
            name="cleanup",
            **options,
        )

    return AgentSpec(name="cleanup", build=build, policy=policy)


@dataclass
class Harness:
    """One running bot: its URL, services, fake Slack, clock and the tool's call log."""

    url: str
    services: Services
    slack: FakeSlack
    clock: ManualClock
    tool_log: ToolLog
    http: aiohttp.ClientSession
    loops: Loops
    agent: str = "cleanup"

    async def start(self, prompt: str = "clean up", *, requested_by: str = CAROL) -> str:
        """Start a cleanup run; the record id of its interrupt once posted."""
        place = Place(channel=CHANNEL, thread_ts=None, requested_by=requested_by)
        await start_run(self.services, self.agent, prompt, place=place)
        await self.slack.wait_calls("chat.postMessage")
        posts = self.slack.called("chat.postMessage")
        value = posts[-1]["blocks"][-1]["elements"][0]["value"]
        return str(value)

    def posted(self, index: int = -1) -> dict[str, Any]:
        return self.slack.called("chat.postMessage")[index]

    async def send(self, payload: dict[str, Any], **sign_kw: Any) -> aiohttp.ClientResponse:
        body = form_body(payload)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body, **sign_kw)
        ) as response:
            await response.read()
            return response

    async def command(self, text: str, *, user: str, channel: str = CHANNEL) -> Any:
        """Send ``/signoff <text>``; the ack's message (Bolt answers plain text as the body).

        Slack shows either form only to the caller."""
        body = command_body(text=text, user=user, channel=channel)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body)
        ) as response:
            assert response.status == 200
            answer = await response.text()
            if response.content_type == "application/json":
                return json.loads(answer)
            return {"text": answer}

    async def event(
        self, event: dict[str, Any], *, event_id: str | None = None, retry: int = 0
    ) -> None:
        """Deliver an Events API event, as JSON, signed; ``retry`` > 0 as Slack's retry."""
        body = event_body(event, event_id=event_id)
        headers = {**sign(body), "Content-Type": "application/json"}
        if retry:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        async with self.http.post(self.url + EVENTS_PATH, data=body.encode(), headers=headers) as r:
            assert r.status == 200

    async def click(
        self,
        action_id: str,
        value: str,
        *,
        user: str,
        channel: str = CHANNEL,
        message_ts: str | None = None,
        block_id: str = "signoff.decide",
        selected: str | None = None,
    ) -> aiohttp.ClientResponse:
        ts = message_ts or self.message_ts()
        payload = click_payload(
            action_id=action_id, value=value, user=user, channel=channel, message_ts=ts
        )
        payload["actions"][0]["block_id"] = block_id
        if selected is not None:  # a select: Slack sends the chosen option, not a value
            action = payload["actions"][0]
            action.pop("value")
            action |= {"type": "static_select", "selected_option": {"value": selected}}
        return await self.send(payload)

    async def submit(self, callback_id: str, value: str, *, user: str, text: str | None) -> Any:
        payload = submit_payload(callback_id=callback_id, metadata=value, user=user, text=text)
        body = form_body(payload)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body)
        ) as response:
            text_body = await response.text()
            return response.status, text_body

    async def decide(
        self, how: str, value: str, *, user: str, message_ts: str | None = None
    ) -> None:
        """Decide as an approver would: Approve is a click; edit (to ``/tmp/a`` alone), reject
        ("not today") and respond ("done by hand") go through their modal."""
        if how == "approve":
            await self.click(APPROVE, value, user=user, message_ts=message_ts)
            return
        callback, text = DECIDED_BY_MODAL[how]
        status, body = await self.submit(callback, value, user=user, text=text)
        assert status == 200 and "errors" not in body, body

    async def submit_form(
        self, value: str, *, user: str, values: dict[str, dict[str, Any]]
    ) -> tuple[int, str]:
        """Submit the Edit form: ``values`` maps each field's block id to its input state."""
        payload = submit_payload(callback_id=EDIT_VIEW, metadata=value, user=user, text=None)
        payload["view"]["state"]["values"] = {b: {"value": s} for b, s in values.items()}
        body = form_body(payload)
        async with self.http.post(
            self.url + EVENTS_PATH, data=body.encode(), headers=sign(body)
        ) as response:
            return response.status, await response.text()

    async def batch_click(
        self, action: str, *, user: str, unticked: frozenset[int] = frozenset()
    ) -> None:
        """Click a button of the batch card (the first message, as last drawn) with the
        checkbox state the clicker's client shows: the groups holding an unticked item are
        in the state, the others are as drawn."""
        updates = [u for u in self.slack.called("chat.update") if u["ts"] == self.message_ts()]
        card = updates[-1] if updates else self.posted(0)
        elements = [e for b in card["blocks"] for e in b.get("elements", [])]
        lead = next(e["value"] for e in elements if e.get("action_id") == action)
        payload = click_payload(
            action_id=action, value=lead, user=user, channel=CHANNEL, message_ts=self.message_ts()
        )
        values: dict[str, Any] = {}
        for block in card["blocks"]:
            if not block.get("block_id", "").startswith(BATCH_BLOCK + " "):
                continue
            [box] = block["elements"]
            if any(int(o["value"]) in unticked for o in box["options"]):
                picked = [o for o in box["options"] if int(o["value"]) not in unticked]
                values[block["block_id"]] = {
                    box["action_id"]: {"type": "checkboxes", "selected_options": picked}
                }
        payload["state"] = {"values": values}
        await self.send(payload)

    def thread(self) -> list[str]:
        """Texts posted in the first interrupt message's thread."""
        root = self.message_ts()
        posts = self.slack.called("chat.postMessage")
        return [str(p.get("text")) for p in posts if p.get("thread_ts") == root]

    async def finished(self) -> str:
        """Wait for the run's final result in the thread, and return it."""

        def done() -> bool:
            return any(t.startswith(("Finished", "Stopped")) for t in self.thread())

        await self.slack.wait_for(done, what="the run's final result in the thread")
        return next(t for t in self.thread() if t.startswith(("Finished", "Stopped")))

    async def clicks_done(self, *, within: float = 5.0) -> None:
        """Wait until the click deciders are done with every click sent: each decided, its
        card drawn and the click acknowledged, which the resumed run does not wait for."""
        deadline = time.monotonic() + within
        while await self.services.storage.clicks.lag():
            assert time.monotonic() < deadline, f"clicks not done within {within}s"
            await asyncio.sleep(0.01)

    async def settled(self) -> None:
        """Wait until the bot is done with every decision sent, however it came: the click
        deciders', and what a form's or Home's ack left to the background (cards drawn)."""
        await self.clicks_done()
        await self.services.background.idle()

    def record_id(self, value: str) -> str:
        return value.split(" ")[0]

    def message_ts(self, index: int = 0) -> str:
        return str(self.slack.answers("chat.postMessage")[index]["ts"])


def card_now(bot: Harness) -> dict[str, Any]:
    """The card as it reads now: its last update, else as posted."""
    updates = bot.slack.called("chat.update")
    return updates[-1] if updates else bot.posted(0)
