"""manifest.yml is a valid Slack app manifest with what the bot needs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Slack's published app manifest schema, copied unchanged from slackapi/manifest-schema v1.0.0.
SCHEMA = Path(__file__).with_name("manifest.schema.json")


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
