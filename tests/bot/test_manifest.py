"""manifest.yml is a valid Slack app manifest with what the bot needs."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Slack's published app manifest schema, copied unchanged from slackapi/manifest-schema v1.0.0.
SCHEMA = Path(__file__).with_name("manifest.schema.json")


_HISTORY = ("channels:history", "groups:history", "im:history", "mpim:history")
METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "auth_test": (),
    "apps_connections_open": (),  # the app-level token's connections:write, not the bot's
    "chat_getPermalink": (),
    "chat_postEphemeral": ("chat:write",),
    "chat_postMessage": ("chat:write",),
    "chat_update": ("chat:write",),
    # Cards are in public and private channels, the DM of a dm=True policy with one user,
    # and the group DM of one with several.
    "conversations_history": _HISTORY,
    "conversations_replies": _HISTORY,
    "conversations_open": ("im:write", "mpim:write"),
    "usergroups_list": ("usergroups:read",),
    "usergroups_users_list": ("usergroups:read",),
    "users_conversations": ("channels:read", "groups:read"),  # public and private channels
    "users_info": ("users:read",),
    "views_open": (),
    "views_publish": (),
}
"""Each Web API method the bot calls, with the bot scopes Slack's reference asks of it."""
EVENT_SCOPES: dict[str, tuple[str, ...]] = {
    "app_home_opened": (),
    "app_mention": ("app_mentions:read",),
    "member_joined_channel": ("channels:read", "groups:read"),
}
_FAMILIES = (
    "admin api apps assistant auth bookmarks bots calls canvases chat conversations dialog dnd "
    "emoji files functions migration oauth openid pins reactions reminders rtm search stars "
    "team tooling usergroups users views workflows"
)
_METHOD = re.compile(rf"({'|'.join(_FAMILIES.split())})_[a-zA-Z_]+")
"""A Web API method's name as slack-sdk spells it: its family (Slack's list), then the rest."""


def _bot_calls() -> set[str]:
    """The Web API methods called on a Slack client (``client.chat_postMessage(...)``)
    anywhere in ``bot/``."""
    called = set()
    for path in (ROOT / "bot").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = ast.unparse(node.func.value)
            if receiver.endswith("client") and _METHOD.fullmatch(node.func.attr):
                called.add(node.func.attr)
    return called


def _handled(kind: str) -> set[str]:
    """What ``bot/slack/app.py`` registers with ``app.<kind>("...")``."""
    source = (ROOT / "bot" / "slack" / "app.py").read_text()
    return set(re.findall(rf'app\.{kind}\("([^"]+)"\)', source))


def _manifest() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "manifest.yml").read_text())


def test_manifest_validates_against_slacks_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    jsonschema.validate(_manifest(), schema)


def test_http_variant_validates_too() -> None:
    manifest = _manifest()
    url = "https://signoff.example.com/slack/events"
    manifest["settings"]["socket_mode_enabled"] = False
    manifest["settings"]["interactivity"]["request_url"] = url
    manifest["settings"]["event_subscriptions"]["request_url"] = url
    manifest["features"]["slash_commands"][0]["url"] = url
    jsonschema.validate(manifest, json.loads(SCHEMA.read_text()))


def test_manifest_asks_for_the_scopes_and_features_the_bot_uses() -> None:
    manifest = _manifest()
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    needed = {"chat:write", "commands", "users:read", "usergroups:read", "im:write"}
    # conversations.open with several users (a dm=True policy with 2-8 approvers) needs
    # mpim:write, as with one user it needs im:write.
    assert needed | {"mpim:write", "app_mentions:read"} <= scopes
    # App Home lists requests open to a whole channel in the channels its viewer is in.
    assert {"channels:read", "groups:read"} <= scopes
    # The outbox looks for a card an earlier try posted unrecorded, in channels and DMs.
    assert {"channels:history", "groups:history", "im:history", "mpim:history"} <= scopes
    assert manifest["settings"]["socket_mode_enabled"] is True
    # The app added to a channel posts the cards waiting there at once (tests/bot/test_invite.py).
    events = manifest["settings"]["event_subscriptions"]["bot_events"]
    assert {"app_home_opened", "app_mention", "member_joined_channel"} <= set(events)
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    # Cards and notices sent by DM are read in the Messages tab; nothing typed there is read.
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
    assert manifest["features"]["app_home"]["messages_tab_read_only_enabled"] is True
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/signoff"]
    assert "url" not in manifest["features"]["slash_commands"][0]
    # Escaped, "@alice" arrives as <@U…|alice>: "/signoff away … to @someone" reads the id.
    assert manifest["features"]["slash_commands"][0]["should_escape"] is True


def test_the_manifest_asks_for_no_scope_the_bot_does_not_use() -> None:
    """Least privilege: the scopes are exactly those of the methods the bot calls, the
    events it handles and its slash command; a call or event added without its scope (or a
    scope kept for a call removed) fails here."""
    manifest = _manifest()
    assert _bot_calls() == set(METHOD_SCOPES)
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert events == _handled("event") == set(EVENT_SCOPES)
    commands = {c["command"] for c in manifest["features"]["slash_commands"]}
    assert commands == _handled("command")
    needed = {"commands"}.union(*METHOD_SCOPES.values(), *EVENT_SCOPES.values())
    assert set(manifest["oauth_config"]["scopes"]["bot"]) == needed
