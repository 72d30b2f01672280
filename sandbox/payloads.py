"""The JSON Slack sends to apps: interaction payloads, slash command fields, event callbacks.

Shapes follow Slack's reference and what bolt-python's parsers read (SLACK.md).
"""

from __future__ import annotations

import time

from .entities import Channel, JsonObject
from .ids import Ids
from .workspace import Workspace

VERIFICATION_TOKEN = "sandbox-verification-token"  # deprecated by Slack, still sent


class Payloads:
    """Builds payloads for one workspace's app."""

    def __init__(self, workspace: Workspace) -> None:
        self._ws = workspace

    def _user(self, user_id: str) -> JsonObject:
        user = self._ws.users[user_id]
        return {"id": user.id, "username": user.name, "name": user.name, "team_id": user.team_id}

    def _envelope(self, kind: str, user_id: str) -> JsonObject:
        return {
            "type": kind,
            "user": self._user(user_id),
            "api_app_id": self._ws.app.app_id,
            "token": VERIFICATION_TOKEN,
            "team": {"id": self._ws.team_id, "domain": self._ws.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
        }

    @staticmethod
    def action(
        block: JsonObject, element: JsonObject, *, selected: JsonObject | None
    ) -> JsonObject:
        """One entry of `actions[]`: what was clicked or chosen, echoing the element."""
        out: JsonObject = {
            "type": element.get("type"),
            "action_id": element.get("action_id"),
            "block_id": block.get("block_id"),
            "action_ts": f"{time.time():.6f}",
        }
        if element.get("type") == "button":
            out["text"] = element.get("text")
            if "value" in element:
                out["value"] = element["value"]
            if "style" in element:
                out["style"] = element["style"]
        elif element.get("type") == "overflow":
            out["selected_option"] = selected
        else:
            out["selected_option"] = selected
            if "placeholder" in element:
                out["placeholder"] = element["placeholder"]
        return out

    def message_actions(
        self,
        user_id: str,
        *,
        action: JsonObject,
        channel: Channel,
        message: JsonObject,
        is_ephemeral: bool,
        trigger_id: str,
        response_url: str,
        state: JsonObject,
    ) -> JsonObject:
        """`block_actions` for a click on a message (or an ephemeral message); ``state``
        holds its checkbox groups' ticks."""
        container: JsonObject = {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel.id,
            "is_ephemeral": is_ephemeral,
        }
        if message.get("thread_ts") and message["thread_ts"] != message["ts"]:
            container["thread_ts"] = message["thread_ts"]
        payload = self._envelope("block_actions", user_id)
        payload.update(
            container=container,
            trigger_id=trigger_id,
            channel={
                "id": channel.id,
                "name": channel.name if not channel.is_im else "directmessage",
            },
            state={"values": state},
            response_url=response_url,
            actions=[action],
        )
        if not is_ephemeral:
            payload["message"] = message
        return payload

    def view_actions(
        self, user_id: str, *, action: JsonObject, view: JsonObject, trigger_id: str
    ) -> JsonObject:
        """`block_actions` for a click inside a modal or the Home tab."""
        payload = self._envelope("block_actions", user_id)
        payload.update(
            container={"type": "view", "view_id": view["id"]},
            trigger_id=trigger_id,
            view=view,
            actions=[action],
        )
        return payload

    def view_submission(self, user_id: str, *, view: JsonObject, trigger_id: str) -> JsonObject:
        payload = self._envelope("view_submission", user_id)
        payload.update(trigger_id=trigger_id, view=view, response_urls=[])
        return payload

    def view_closed(self, user_id: str, *, view: JsonObject, is_cleared: bool) -> JsonObject:
        payload = self._envelope("view_closed", user_id)
        payload.update(view=view, is_cleared=is_cleared)
        return payload

    def slash_command(
        self,
        user_id: str,
        *,
        channel: Channel,
        command: str,
        text: str,
        trigger_id: str,
        response_url: str,
    ) -> JsonObject:
        """The form fields of a slash command (sent form-encoded, not as JSON)."""
        user = self._ws.users[user_id]
        return {
            "token": VERIFICATION_TOKEN,
            "team_id": self._ws.team_id,
            "team_domain": self._ws.team_domain,
            "channel_id": channel.id,
            "channel_name": channel.name if not channel.is_im else "directmessage",
            "user_id": user.id,
            "user_name": user.name,
            "command": command,
            "text": text,
            "api_app_id": self._ws.app.app_id,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id,
        }

    def event_callback(self, event: JsonObject) -> JsonObject:
        """An Events API `event_callback` wrapping `event`."""
        now = int(time.time())
        return {
            "token": VERIFICATION_TOKEN,
            "team_id": self._ws.team_id,
            "api_app_id": self._ws.app.app_id,
            "event": event,
            "type": "event_callback",
            "event_id": Ids.new("Ev"),
            "event_time": now,
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self._ws.team_id,
                    "user_id": self._ws.app.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": Ids.token(),
        }
