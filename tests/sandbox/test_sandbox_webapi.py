"""The Web API answers what slack-sdk's AsyncWebClient expects, errors included: auth,
messages and their limits, channels, users and groups."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from sandbox_buttons import BUTTONS
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from sandbox import Sandbox
from sandbox.errors import UserActionError


async def test_auth_test_names_the_bot(client: AsyncWebClient, sb: Sandbox) -> None:
    response = await client.auth_test()
    assert response["user_id"] == sb.workspace.app.bot_user_id
    assert response["bot_id"] == sb.workspace.app.bot_id
    assert response["team_id"] == sb.workspace.team_id


async def test_wrong_token_is_invalid_auth(sb: Sandbox) -> None:
    with pytest.raises(SlackApiError) as caught:
        await AsyncWebClient(base_url=sb.api_url, token="xoxb-wrong").auth_test()
    assert caught.value.response["error"] == "invalid_auth"


async def test_missing_token_is_not_authed(sb: Sandbox) -> None:
    with pytest.raises(SlackApiError) as caught:
        await AsyncWebClient(base_url=sb.api_url).auth_test()
    assert caught.value.response["error"] == "not_authed"


async def test_app_token_is_refused_for_bot_methods(sb: Sandbox) -> None:
    with pytest.raises(SlackApiError) as caught:
        await AsyncWebClient(base_url=sb.api_url, token=sb.app_token).auth_test()
    assert caught.value.response["error"] == "not_allowed_token_type"


async def test_post_message_returns_ts_and_message(client: AsyncWebClient, sb: Sandbox) -> None:
    response = await client.chat_postMessage(channel="C0OPS", text="fallback", blocks=BUTTONS)
    assert response["channel"] == "C0OPS"
    message = response["message"]
    assert message["ts"] == response["ts"]
    assert message["bot_id"] == sb.workspace.app.bot_id
    assert [b["type"] for b in message["blocks"]] == ["section", "actions"]
    assert all(b["block_id"] for b in message["blocks"]), "Slack fills in block ids"
    assert sb.workspace.message("C0OPS", response["ts"]) is not None


async def test_thread_replies_join_the_parent(client: AsyncWebClient, sb: Sandbox) -> None:
    parent = await client.chat_postMessage(channel="C0OPS", text="parent")
    reply = await client.chat_postMessage(channel="C0OPS", text="one", thread_ts=parent["ts"])
    nested = await client.chat_postMessage(channel="C0OPS", text="two", thread_ts=reply["ts"])
    assert reply["message"]["thread_ts"] == parent["ts"]
    assert nested["message"]["thread_ts"] == parent["ts"]
    thread = sb.workspace.replies("C0OPS", parent["ts"])
    assert [m.text for m in thread] == ["parent", "one", "two"]
    assert [m.text for m in sb.workspace.history("C0OPS")] == ["parent"]
    assert sb.workspace.to_slack(thread[0])["reply_count"] == 2


async def test_post_by_channel_name_and_to_a_user(client: AsyncWebClient) -> None:
    by_name = await client.chat_postMessage(channel="#general", text="hi")
    assert by_name["channel"] == "C0GENERAL"
    dm = await client.chat_postMessage(channel="U0BOB", text="psst")
    assert dm["channel"].startswith("D")


async def test_unknown_channel_is_channel_not_found(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C0NOPE", text="x")
    assert caught.value.response["error"] == "channel_not_found"


async def test_channel_without_the_bot_is_not_in_channel(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C0RANDOM", text="x")
    assert caught.value.response["error"] == "not_in_channel"


async def test_invite_adds_the_app_to_the_channel_as_slack_does(
    sb: Sandbox, client: AsyncWebClient
) -> None:
    """``/invite @Signoff``, as Signoff tells a requester whose card Slack refused."""
    with pytest.raises(UserActionError, match="name the app to invite"):
        await sb.interactions.slash_command("U0ALICE", channel="C0RANDOM", command="/invite")
    ack = await sb.interactions.slash_command(
        "U0ALICE", channel="C0RANDOM", command="/invite", text="@Signoff"
    )
    assert ack.status == "acked"
    posted = await client.chat_postMessage(channel="C0RANDOM", text="x")
    assert posted["ok"] and posted["channel"] == "C0RANDOM"
    [notice] = sb.workspace.notices("U0ALICE")
    assert notice.text == "@signoff was added to #random."


async def test_blocks_over_slack_limits_are_invalid_blocks(client: AsyncWebClient) -> None:
    long_button = [
        {
            "type": "actions",
            "elements": [
                {
                    "type": "button",
                    "action_id": "a",
                    "text": {"type": "plain_text", "text": "x" * 76},
                }
            ],
        }
    ]
    too_many = [{"type": "divider"}] * 51
    for blocks in (long_button, too_many):
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks)
        assert caught.value.response["error"] == "invalid_blocks"
        assert caught.value.response["response_metadata"]["messages"][0].startswith("[ERROR]")


async def test_blocks_too_long_together_are_msg_blocks_too_long(client: AsyncWebClient) -> None:
    """Five sections, each within its 3,000 characters, hold more than 12,000 together:
    refused as Slack refuses them, on a post and on an update."""
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2500}}] * 5
    with pytest.raises(SlackApiError) as caught:
        await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks)
    assert caught.value.response["error"] == "msg_blocks_too_long"
    posted = await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks[:4])
    with pytest.raises(SlackApiError) as caught:
        await client.chat_update(channel="C0OPS", ts=posted["ts"], text="x", blocks=blocks)
    assert caught.value.response["error"] == "msg_blocks_too_long"


async def test_update_replaces_text_and_blocks(client: AsyncWebClient, sb: Sandbox) -> None:
    posted = await client.chat_postMessage(channel="C0OPS", text="pending", blocks=BUTTONS)
    updated = await client.chat_update(
        channel="C0OPS", ts=posted["ts"], text="Approved by Alice", blocks=[]
    )
    assert updated["ts"] == posted["ts"]
    message = sb.workspace.message("C0OPS", posted["ts"])
    assert message is not None and message.text == "Approved by Alice" and message.blocks == ()
    assert "edited" in updated["message"]


async def test_update_of_unknown_message_fails(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.chat_update(channel="C0OPS", ts="1.000001", text="x")
    assert caught.value.response["error"] == "message_not_found"


async def test_ephemeral_reaches_only_its_user(client: AsyncWebClient, sb: Sandbox) -> None:
    response = await client.chat_postEphemeral(channel="C0OPS", user="U0BOB", text="only bob")
    assert response["message_ts"]
    assert [e.text for e in sb.workspace.ephemerals("U0BOB", "C0OPS")] == ["only bob"]
    assert sb.workspace.ephemerals("U0ALICE", "C0OPS") == []


async def test_users_info_has_time_zones(client: AsyncWebClient) -> None:
    user = (await client.users_info(user="U0CAROL"))["user"]
    assert user["tz"] == "Asia/Tokyo"
    assert user["tz_offset"] == 9 * 3600
    assert user["tz_label"]
    with pytest.raises(SlackApiError) as caught:
        await client.users_info(user="U0NOBODY")
    assert caught.value.response["error"] == "user_not_found"


async def test_usergroup_members(client: AsyncWebClient) -> None:
    response = await client.usergroups_users_list(usergroup="S0ONCALL")
    assert response["users"] == ["U0ALICE", "U0BOB", "U0CAROL"]
    with pytest.raises(SlackApiError) as caught:
        await client.usergroups_users_list(usergroup="S0NONE")
    assert caught.value.response["error"] == "no_such_subteam"


async def test_conversations_open_gives_one_dm_per_user(client: AsyncWebClient) -> None:
    first = await client.conversations_open(users="U0DAVE")
    again = await client.conversations_open(users=["U0DAVE"])
    assert first["channel"]["id"] == again["channel"]["id"]
    assert first["channel"]["id"].startswith("D")
    assert again["already_open"] is True


async def test_conversations_open_with_several_users_gives_one_group_dm(
    client: AsyncWebClient,
) -> None:
    first = await client.conversations_open(users="U0ALICE,U0BOB")
    again = await client.conversations_open(users=["U0BOB", "U0ALICE"])
    assert first["channel"]["id"] == again["channel"]["id"]
    assert first["channel"]["is_mpim"] is True
    other = await client.conversations_open(users="U0ALICE,U0CAROL")
    assert other["channel"]["id"] != first["channel"]["id"]
    await client.chat_postMessage(channel=first["channel"]["id"], text="for the two of you")
    for users, error in [
        ("U0ALICE,U0NOBODY", "user_not_found"),
        (",".join(f"U0P{n}" for n in range(9)), "too_many_users"),
    ]:
        with pytest.raises(SlackApiError) as caught:
            await client.conversations_open(users=users)
        assert caught.value.response["error"] == error


async def test_form_encoded_calls_work_too(sb: Sandbox) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            sb.api_url + "chat.postMessage",
            data={
                "token": sb.bot_token,
                "channel": "C0OPS",
                "text": "form",
                "blocks": '[{"type": "divider"}]',
            },
        ) as response,
    ):
        body = await response.json()
    assert body["ok"] is True
    assert body["message"]["blocks"][0]["type"] == "divider"


async def test_unknown_method(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as caught:
        await client.api_call("chat.scheduleMessage", json={"channel": "C0OPS"})
    assert caught.value.response["error"] == "unknown_method"


async def test_every_call_is_logged(client: AsyncWebClient, sb: Sandbox) -> None:
    await client.chat_postMessage(channel="C0OPS", text="x")
    with pytest.raises(SlackApiError):
        await client.chat_postMessage(channel="C0NOPE", text="x")
    calls = sb.faults.calls("chat.postMessage")
    assert [(c.status, c.error) for c in calls] == [(200, None), (200, "channel_not_found")]
    assert calls[0].args["channel"] == "C0OPS"
    assert "token" not in calls[0].args


async def test_users_conversations_lists_the_channels_a_member_is_in(
    client: AsyncWebClient,
) -> None:
    answer = await client.users_conversations(user="U0ALICE", types="public_channel")
    ids = {c["id"] for c in answer["channels"]}
    assert {"C0OPS", "C0GENERAL"} <= ids and all(i.startswith("C") for i in ids)
    with pytest.raises(SlackApiError, match="user_not_found"):
        await client.users_conversations(user="U0NOBODY")


async def test_options_over_slack_limits_are_invalid_blocks(client: AsyncWebClient) -> None:
    """Slack refuses an option whose text passes 75 characters or whose value passes 150,
    and more options than an element holds: an app that sends them fails here too."""

    def select(kind: str, count: int, *, text: str = "x", value: str = "v") -> list[Any]:
        options = [
            {"text": {"type": "plain_text", "text": text}, "value": f"{value}{n}"}
            for n in range(count)
        ]
        return [{"type": "actions", "elements": [{"type": kind, "options": options}]}]

    for blocks in (
        select("static_select", 1, text="x" * 76),
        select("static_select", 1, value="v" * 150),
        select("static_select", 101),
        select("overflow", 6),
        select("checkboxes", 11),
    ):
        with pytest.raises(SlackApiError) as caught:
            await client.chat_postMessage(channel="C0OPS", text="x", blocks=blocks)
        assert caught.value.response["error"] == "invalid_blocks", blocks
    fine = select("static_select", 100, text="x" * 75, value="v" * 147)
    assert (await client.chat_postMessage(channel="C0OPS", text="x", blocks=fine))["ok"]
