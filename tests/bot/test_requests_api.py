"""The requests API over real HTTP and real Redis: a job asks, approvers decide in Slack,
and the job learns the answer from a long-poll the moment it is given."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest
from fakes import Fault
from harness import ALICE, BOB, CAROL
from requests_jobs import Jobs

import signoff
from bot.api.request_records import REQUESTS_PATH
from bot.schedule.scheduler import Scheduler
from bot.ui import ids
from storage.requests import request_record_id


async def test_a_job_asks_and_a_long_poll_answers_the_moment_it_is_approved(jobs: Jobs) -> None:
    status, made = await jobs.ask(
        details="volumes older than 90 days <!channel>",
        params=[{"name": "limit", "type": "integer", "value": 42}],
    )
    assert status == 201, made
    assert made["status"] == "pending" and made["requested_by"] == "nightly-cleanup"
    assert made["permalink"].startswith("https://fake.slack.test/archives/C0OPS/p")
    assert made["status_url"] == f"{REQUESTS_PATH}/{made['id']}"
    card = json.dumps(jobs.card()["blocks"])
    assert "Delete 42 stale volumes" in card and "Requested by nightly-cleanup" in card
    assert "&lt;!channel&gt;" in card and "<!channel>" not in card
    assert '\\"limit\\": 42' in card

    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    status, answer = await asyncio.wait_for(waiting, 10)
    assert status == 200
    assert answer["status"] == "approved" and answer["decided_by"] == ALICE
    assert answer["params"] == {"limit": 42}
    # Slack's names for the ids, so a job's log can say who (users.info, cached).
    assert answer["names"] == {ALICE: "u0alice", BOB: "u0bob"}


async def test_a_long_poll_with_nothing_decided_answers_pending_when_the_wait_ends(
    jobs: Jobs,
) -> None:
    _, made = await jobs.ask()
    status, answer = await jobs.get(made["status_url"] + "?wait=0.2")
    assert status == 200 and answer["status"] == "pending"


async def test_a_long_poll_on_a_request_redis_lost_answers_lost_once_it_is_met(
    jobs: Jobs,
) -> None:
    """Not "pending" at the end of the wait, for a request nobody can decide any more."""
    _, made = await jobs.ask()
    storage = jobs.bot.services.storage
    raw = storage.client.raw
    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))

    async def following() -> bool:  # the long poll reads the request events
        return any(c["cmd"] == "xread" and "b" in c["flags"] for c in await raw.client_list())

    deadline = time.monotonic() + 5
    while not await following():
        assert time.monotonic() < deadline, "the long poll never waited"
        await asyncio.sleep(0.01)
    await raw.delete(storage.keys.record(request_record_id(made["id"])))
    jobs.bot.clock.advance(timedelta(days=1))
    await Scheduler(jobs.bot.services).tick()  # meets it lost
    status, answer = await asyncio.wait_for(waiting, 10)
    assert status == 200 and answer["id"] == made["id"] and answer["status"] == "lost", answer


async def test_while_slack_is_down_a_view_answers_with_ids_and_no_names(jobs: Jobs) -> None:
    jobs.bot.slack.down = True
    status, made = await jobs.ask(approvers=[CAROL])
    assert status == 201 and made["approvers"] == [CAROL] and made["names"] == {}


async def test_a_card_slack_refused_says_why_until_the_outbox_posts_it(jobs: Jobs) -> None:
    """The app is not in the channel yet: the job is told what Slack answered; once the
    app is invited, the outbox posts the card and the view links it."""
    refused = Fault(status=200, body={"ok": False, "error": "not_in_channel"})
    jobs.bot.slack.faults["chat.postMessage"].append(refused)
    status, made = await jobs.ask()
    assert status == 201 and made["not_posted"] == "not_in_channel" and made["permalink"] is None
    assert (await jobs.get(made["status_url"]))[1]["not_posted"] == "not_in_channel"

    jobs.bot.clock.advance(timedelta(seconds=31))
    await Scheduler(jobs.bot.services).tick()
    _, view = await jobs.get(made["status_url"])
    assert view["not_posted"] is None and view["permalink"].startswith("https://fake.slack.test/")


async def test_a_request_whose_stored_data_is_damaged_is_said_so_not_storage_down(
    jobs: Jobs,
) -> None:
    """Asking again will never help: not a 503 (which the client retries without end) but
    an error naming the damage, which the client raises."""
    _, made = await jobs.ask()
    storage = jobs.bot.services.storage
    await storage.client.raw.set(storage.keys.request(made["id"]), "{broken")
    status, body = await jobs.get(made["status_url"] + "?wait=5")
    assert status == 500 and "damaged" in body["error"], body
    async with signoff.Client(jobs.base, jobs.token) as client:
        with pytest.raises(signoff.RequestRefused):
            await asyncio.wait_for(client.wait(made["id"]), 10)


async def test_approvers_may_edit_only_editable_params_and_the_job_gets_the_edit(
    jobs: Jobs,
) -> None:
    params = [
        {"name": "limit", "type": "integer", "value": 42, "editable": True},
        {"name": "region", "type": "string", "value": "eu-west-1"},
        {"name": "ratio", "type": "number", "value": 0.5, "editable": True},
    ]
    _, made = await jobs.ask(params=params)
    value = jobs.value()
    locked = json.dumps({"limit": 42, "region": "us-east-1", "ratio": 0.5})
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=locked)
    assert status == 200 and "'region' cannot be edited" in body
    wrong_type = json.dumps({"limit": "all", "region": "eu-west-1", "ratio": 0.5})
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=wrong_type)
    assert "param 'limit' must be an integer, got 'all'" in body

    for not_a_number in ("NaN", "Infinity", "1e999"):
        text = f'{{"limit": 42, "region": "eu-west-1", "ratio": {not_a_number}}}'
        status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=text)
        assert status == 200 and f"{not_a_number} is" in str(json.loads(body)["errors"]), body
    edited = {"limit": 10, "region": "eu-west-1", "ratio": 0.25}
    status, body = await jobs.bot.submit(ids.EDIT_VIEW, value, user=ALICE, text=json.dumps(edited))
    assert status == 200 and "errors" not in body
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "edited" and answer["params"] == edited
    # The card labels what was asked as such: the job ran with the edit, shown below it.
    await jobs.bot.services.background.idle()  # the card is redrawn after the form's ack
    sections = [
        b["text"]["text"] for b in jobs.bot.slack.called("chat.update")[-1]["blocks"] if "text" in b
    ]
    [asked] = [s for s in sections if '"limit": 42' in s]
    [ran] = [s for s in sections if '"limit": 10' in s]
    assert asked.startswith("*Params as asked*") and ran.startswith("*Run with*")


async def test_a_user_group_named_by_its_handle_decides(jobs: Jobs) -> None:
    jobs.bot.slack.groups["S0ONCALL"] = [ALICE, BOB]
    jobs.bot.slack.handles["S0ONCALL"] = "oncall"
    jobs.bot.slack.down = True  # a passing outage: try again, not "no such group"
    status, refused = await jobs.ask(approvers=["@oncall"], min_approvals=2)
    assert (status, refused["field"]) == (503, "approvers.0"), refused
    assert "Slack could not be reached" in refused["error"]
    assert jobs.bot.slack.called("chat.postMessage") == []
    jobs.bot.slack.down = False
    status, made = await jobs.ask(approvers=["@oncall"], min_approvals=2)
    assert status == 201, made
    assert made["approvers"] == ["S0ONCALL"] and made["names"]["S0ONCALL"] == "@oncall"
    for user in (ALICE, BOB):
        await jobs.bot.click(ids.APPROVE, jobs.value(), user=user)
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "approved" and answer["approvals"] == [ALICE, BOB]


async def test_a_reminder_is_counted_and_audited(jobs: Jobs) -> None:
    _, made = await jobs.ask(reminders={"every": 60, "limit": 2, "start_hour": 0, "end_hour": 24})
    jobs.bot.clock.advance(timedelta(seconds=61))
    await Scheduler(jobs.bot.services).tick()
    _, seen = await jobs.get(made["status_url"])
    assert seen["reminders_sent"] == 1 and seen["status"] == "pending"
    assert jobs.bot.thread()[-1].startswith("Reminder: this request is still waiting")
    audit = await jobs.bot.services.storage.audit.read(count=100)
    assert [e.run_id for e in audit if e.event == "reminded"] == [made["id"]]


async def test_a_reply_reaches_the_job_when_replies_are_allowed(jobs: Jobs) -> None:
    _, made = await jobs.ask(allow_reply=True)
    buttons = [e["action_id"] for e in jobs.card()["blocks"][-1]["elements"]]
    assert ids.REPLY in buttons
    await jobs.bot.click(ids.DENY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open")
    assert "goes back to the job that asked" in json.dumps(jobs.bot.slack.called("views.open"))
    await jobs.bot.click(ids.REPLY, jobs.value(), user=BOB)
    await jobs.bot.slack.wait_calls("views.open", 2)
    form = json.dumps(jobs.bot.slack.called("views.open")[-1]["view"])
    assert "goes to the job that asked" in form and "does not run" not in form
    status, _ = await jobs.bot.submit(ids.REPLY_VIEW, jobs.value(), user=BOB, text="only vol-7")
    assert status == 200
    _, answer = await jobs.get(made["status_url"] + "?wait=10")
    assert answer["status"] == "responded" and answer["reply"] == "only vol-7"
    assert answer["decided_by"] == BOB
    await jobs.bot.slack.wait_calls("chat.update")
    headline = jobs.bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"]
    assert headline.startswith("Replied:") and "instead of run" not in headline


async def test_with_an_undo_window_the_job_hears_of_the_decision_only_when_it_ends(
    jobs: Jobs,
) -> None:
    _, made = await jobs.ask(undo_window=60)
    await jobs.bot.click(ids.APPROVE, jobs.value(), user=ALICE)
    await jobs.bot.slack.wait_calls("chat.update")
    status, held = await jobs.get(made["status_url"] + "?wait=0.2")
    assert status == 200 and held["status"] == "pending" and held["held_by"] == ALICE
    assert held["held_until"] is not None

    waiting = asyncio.create_task(jobs.get(made["status_url"] + "?wait=30"))
    jobs.bot.clock.advance(timedelta(seconds=60))
    await Scheduler(jobs.bot.services).tick()
    status, answer = await asyncio.wait_for(waiting, 10)
    assert answer["status"] == "approved" and answer["decided_by"] == ALICE
    assert answer["held_until"] is None
    assert jobs.bot.slack.called("chat.update")[-1]["blocks"][0]["text"]["text"].startswith(
        "Approved:"
    )


async def test_what_a_request_asked_is_kept_as_long_as_its_escalations_may_wait(
    jobs: Jobs,
) -> None:
    month = 30 * 86400
    status, made = await jobs.ask(
        expires_in=60,
        on_expiry="escalate",
        escalate_to=[CAROL],
        escalate_expires_in=month,
        ladder=[{"approvers": [ALICE], "expires_in": month}],
    )
    assert status == 201, made
    storage = jobs.bot.services.storage
    kept_ms = await storage.client.raw.pttl(storage.keys.request(made["id"]))
    assert kept_ms > (60 + 2 * month) * 1000  # past the last step's expiry, not the first's
