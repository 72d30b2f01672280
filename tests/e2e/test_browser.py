"""The demo in a real browser: run agents from the page, then approve, deny and edit, and
invite the app to a channel that refused its card."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from demo_process import DemoProcess
from playwright.sync_api import expect
from workspace_page import SlackPage

ALICE, BOB, CAROL = "U0ALICE", "U0BOB", "U0CAROL"
OpenAs = Callable[[str], SlackPage]


def _scratch(demo: DemoProcess) -> list[str]:
    return sorted(p.name for p in (demo.data_dir / "scratch").iterdir())


def _inject(demo: DemoProcess, fault: dict[str, object]) -> None:
    """Add a fault through the sandbox's admin API."""
    request = urllib.request.Request(
        demo.url + "admin/faults",
        data=json.dumps(fault).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200


def test_approve_cleanup_from_the_page(open_as: OpenAs, demo: DemoProcess) -> None:
    alice = open_as(ALICE)
    alice.send("/signoff run file-cleanup")
    request = alice.message("Approval needed: delete_files")
    expect(request).to_contain_text("Delete 3 file(s) older than 5 days")
    expect(request).to_contain_text("build-1042.log")
    alice.screenshot("pending")

    alice.button(request, "Approve").click()
    alice.confirm()

    decided = alice.message("Approved: delete_files")
    expect(decided).to_contain_text("Approved by @alice")
    expect(alice.button(decided, "Approve")).to_have_count(0)
    thread = alice.open_thread(decided)
    expect(thread).to_contain_text("delete_files: deleted 3 file(s)")
    expect(thread).to_contain_text("Finished: Cleanup finished: deleted 3 file(s).")
    alice.screenshot("approved")
    assert _scratch(demo) == ["notes-today.txt", "report-draft.md"]


def test_deny_with_a_reason_through_the_modal(open_as: OpenAs, demo: DemoProcess) -> None:
    alice = open_as(ALICE)
    alice.send("/signoff run file-cleanup")
    request = alice.message("Approval needed: delete_files")
    alice.button(request, "Deny").click()

    modal = alice.modal("Deny")
    modal.get_by_label("Reason").fill("Not during the release freeze.")
    alice.screenshot("deny-modal")
    modal.locator("[data-role=submit]").click()
    expect(modal).to_be_hidden()

    denied = alice.message("Denied: delete_files")
    expect(denied).to_contain_text("Reason: Not during the release freeze.")
    thread = alice.open_thread(denied)
    expect(thread).to_contain_text("Nothing was deleted")
    expect(thread).to_contain_text("Not during the release freeze.")
    alice.screenshot("denied")
    assert "build-1042.log" in _scratch(demo)


def test_reply_through_the_modal(open_as: OpenAs, demo: DemoProcess) -> None:
    alice = open_as(ALICE)
    alice.send("/signoff run file-cleanup")
    request = alice.message("Approval needed: delete_files")
    alice.button(request, "Reply").click()

    modal = alice.modal("Reply")
    expect(modal).to_contain_text("the tool does not run")
    modal.get_by_label("Reply").fill("Keep them: the auditors need the build logs.")
    alice.screenshot("reply-modal")
    modal.locator("[data-role=submit]").click()
    expect(modal).to_be_hidden()

    answered = alice.message("Answered instead of run: delete_files")
    expect(answered).to_contain_text("💬 Answered instead of run by @alice")
    expect(answered).to_contain_text("Reply: Keep them: the auditors need the build logs.")
    expect(alice.button(answered, "Approve")).to_have_count(0)
    thread = alice.open_thread(answered)
    # The reply is not posted as if it were the tool's output: the tool never ran.
    expect(thread).not_to_contain_text("delete_files: Keep them")
    expect(thread).to_contain_text(
        "Finished: Nothing was deleted: Keep them: the auditors need the build logs."
    )
    expect(thread).not_to_contain_text("deleted 3 file(s)")
    alice.screenshot("replied")
    assert "build-1042.log" in _scratch(demo), "the tool did not run"


def test_edit_the_email_with_one_invalid_attempt(open_as: OpenAs) -> None:
    alice = open_as(ALICE)
    alice.send("/signoff run email")
    request = alice.message("Approval needed: send_email")
    expect(request).to_contain_text("team@example.com")
    alice.button(request, "Edit").click()

    # A form from send_email's schema: one address per line, then subject and body.
    modal = alice.modal("Edit arguments")
    to = modal.get_by_label("to", exact=True)
    expect(to).to_have_value("team@example.com")
    expect(modal.get_by_label("subject", exact=True)).to_have_value("Weekly ops summary")
    to.fill("not an address")
    modal.locator("[data-role=submit]").click()
    error = modal.locator(".field-error")
    expect(error).to_have_text("Line 1: This must be an email address like name@example.com.")
    alice.screenshot("edit-invalid")

    to.fill("ops@example.com")
    modal.get_by_label("subject", exact=True).fill("Ops summary, week 47")
    modal.locator("[data-role=submit]").click()
    expect(modal).to_be_hidden()

    sent = alice.message("Approved with edits: send_email")
    expect(sent).to_contain_text("ops@example.com")
    thread = alice.open_thread(sent)
    expect(thread).to_contain_text("sent 'Ops summary, week 47' to ops@example.com")
    alice.screenshot("edited")


def test_second_approver_learns_it_was_already_decided(open_as: OpenAs, demo: DemoProcess) -> None:
    alice, bob = open_as(ALICE), open_as(BOB)
    alice.send("/signoff run file-cleanup")
    pending = alice.message("Approval needed: delete_files")
    expect(pending).to_be_visible()
    stale = bob.message("Approval needed: delete_files")
    expect(stale).to_be_visible()
    # Slack is slow to redraw the message (chat.update fails for a while), so Bob still
    # sees the buttons after Alice's decision, as happens when two people click at once.
    _inject(demo, {"kind": "server_error", "method": "chat.update", "count": 20})

    alice.button(pending, "Approve").click()
    alice.confirm()
    expect(alice.open_thread(pending)).to_contain_text("Finished: Cleanup finished")

    bob.button(stale, "Approve").click()
    bob.confirm()
    why = bob.ephemeral("your click changed nothing")
    expect(why).to_contain_text("Already approved by @alice")
    expect(why).to_contain_text("Only visible to you")
    bob.screenshot("already-decided")
    expect(alice.ephemeral("your click changed nothing")).to_have_count(0)


def _expiry_seconds(demo: DemoProcess, channel: str) -> int:
    """The expiry timestamp inside the last interrupt message's Slack date token."""
    url = f"{demo.url}ui/channels/{channel}/messages?user={ALICE}"
    with urllib.request.urlopen(url, timeout=5) as answer:
        messages = json.load(answer)["messages"]
    blocks = json.dumps(messages[-1]["blocks"])
    found = re.findall(r"If nobody decides by <!date\^(\d+)\^", blocks)
    assert found, messages[-1]
    return int(found[0])


def _as_slack_shows(seconds: int, zone: str) -> str:
    """``{date_short_pretty} at {time}`` as a reader in ``zone`` sees it."""
    moment = datetime.fromtimestamp(seconds, ZoneInfo(zone))
    hour = moment.hour % 12 or 12
    return f"{moment:%b} {moment.day}, {moment.year} at {hour}:{moment:%M} {moment:%p}"


def test_every_reader_sees_the_expiry_in_their_own_time_zone(
    open_as: OpenAs, demo: DemoProcess
) -> None:
    alice = open_as(ALICE)
    alice.send("/signoff run file-cleanup")
    expect(alice.message("Approval needed: delete_files")).to_be_visible()
    seconds = _expiry_seconds(demo, "C0GENERAL")
    paris, tokyo = _as_slack_shows(seconds, "Europe/Paris"), _as_slack_shows(seconds, "Asia/Tokyo")
    assert paris != tokyo
    expect(alice.message("Approval needed: delete_files")).to_contain_text(
        f"If nobody decides by {paris}"
    )

    carol = open_as(CAROL)
    expect(carol.message("Approval needed: delete_files")).to_contain_text(
        f"If nobody decides by {tokyo}"
    )
    carol.screenshot("tokyo-time")


INVITED_MS = 10_000
"""Far below the outbox's 30 s lease: a card that waited for the outbox's next try fails."""


def test_inviting_the_app_posts_the_refused_card_at_once(open_as: OpenAs) -> None:
    alice = open_as(ALICE)
    alice.go("# random")  # the demo's app is not a member there
    alice.send("/signoff run file-cleanup")

    alice.go("signoff (messages)")
    told = alice.page.locator("#messages article.message", has_text="could not be posted")
    expect(told).to_contain_text("Slack answered not_in_channel")
    expect(told).to_contain_text("Invite the app there (/invite @Signoff)")
    alice.screenshot("told-to-invite")

    alice.go("# random")
    card = alice.message("Approval needed: delete_files")
    expect(card).to_have_count(0)  # Slack refused it before she was told
    alice.send("/invite @Signoff")
    expect(alice.page.locator("#notices")).to_contain_text("@signoff was added to #random.")
    expect(card).to_contain_text("Delete 3 file(s) older than 5 days", timeout=INVITED_MS)
    expect(alice.button(card, "Approve")).to_be_visible()
    alice.screenshot("posted-on-invite")
