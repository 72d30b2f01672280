"""What of the sandbox's workspace outlives a restart: its DMs, group DMs, the channels the
app was invited to, and messages."""

from __future__ import annotations

from sandbox.config import demo_workspace
from sandbox.entities import Message
from sandbox.ids import Ids
from sandbox.persistence import SavedWorkspace, restore, saved
from sandbox.workspace import Workspace


def test_a_group_dm_and_its_messages_are_there_again_after_a_restart() -> None:
    before = Workspace(demo_workspace(), ids=Ids())
    group = before.open_group_dm(["U0ALICE", "U0BOB"])
    before.post(Message(channel=group.id, ts="1700000000.000100", user="U0ALICE", text="hi"))
    kept = SavedWorkspace.model_validate_json(saved(before).model_dump_json())

    after = Workspace(demo_workspace(), ids=Ids())
    restore(after, kept)
    again = after.channels[group.id]
    assert again == group and again.name == "mpdm-alice--bob--signoff-1"
    assert [m.text for m in after.history(group.id)] == ["hi"]
    assert after.open_group_dm(["U0BOB", "U0ALICE"]) is again
    assert [c.id for c in after.channels_of("U0CAROL") if c.is_mpim] == []


def test_a_channel_the_app_was_invited_to_keeps_it_after_a_restart() -> None:
    before = Workspace(demo_workspace(), ids=Ids())
    assert before.add_bot("C0RANDOM") and not before.add_bot("C0RANDOM")
    kept = SavedWorkspace.model_validate_json(saved(before).model_dump_json())

    after = Workspace(demo_workspace(), ids=Ids())
    assert "U0SIGNOFF" not in after.channels["C0RANDOM"].members
    restore(after, kept)
    assert after.channels["C0RANDOM"].members == before.channels["C0RANDOM"].members
