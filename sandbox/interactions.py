"""What a person does in the Slack client, turned into deliveries to the app.

Click a button, submit or close a modal, run a slash command, mention the bot, open the
Home tab. Each returns the app's `Ack`; a missing or late ack shows the user "Operation
timed out" and is never redelivered, as in Slack.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from .blocks import checked_view, find_element, options_of
from .delivery import Ack, Delivery, Outbound
from .entities import Channel, JsonObject, Message, View
from .errors import SlackApiFailure, UserActionError
from .mentions import escape_mentions
from .payloads import Payloads
from .response_urls import Reply, ResponseUrls
from .triggers import Triggers
from .view_state import Submitted, message_state, state_values
from .workspace import Workspace

log = logging.getLogger(__name__)

TIMED_OUT = "Operation timed out. The app did not respond within 3 seconds."


class Interactions:
    """The acting user's side of the workspace."""

    def __init__(
        self,
        workspace: Workspace,
        *,
        delivery: Delivery,
        triggers: Triggers,
        response_urls: ResponseUrls,
    ) -> None:
        self._ws = workspace
        self._delivery = delivery
        self._triggers = triggers
        self._response_urls = response_urls
        self._payloads = Payloads(workspace)

    # -- helpers -----------------------------------------------------------------

    def _channel_for(self, user_id: str, channel_id: str) -> Channel:
        self._ws.require_user(user_id)
        channel = self._ws.channels.get(channel_id)
        if channel is None or user_id not in channel.members:
            raise UserActionError(f"{user_id} cannot see channel {channel_id!r}")
        return channel

    def _report(self, user_id: str, ack: Ack, *, what: str, channel: str | None = None) -> None:
        """Tell the user what the Slack client would tell them when the app fails."""
        if ack.status == "timed_out":
            self._ws.notify(user_id, f"{what}: {TIMED_OUT}", channel=channel)
        elif ack.status == "failed":
            self._ws.notify(user_id, f"{what}: the app failed ({ack.detail}).", channel=channel)
        elif ack.status == "no_app":
            self._ws.notify(user_id, f"{what}: the app is not connected.", channel=channel)

    @staticmethod
    def _selected(element: JsonObject, value: str | None) -> JsonObject | None:
        if element.get("type") == "button":
            return None
        option = next((o for o in options_of(element) if o.get("value") == value), None)
        if option is None:
            raise UserActionError(f"{value!r} is not an option of {element.get('action_id')!r}")
        return option

    # -- messages ----------------------------------------------------------------

    async def click(
        self,
        user_id: str,
        *,
        channel: str,
        message_ts: str,
        action_id: str,
        block_id: str | None = None,
        value: str | None = None,
        ticked: Mapping[str, Sequence[str]] | None = None,
    ) -> Ack:
        """Click a button (or pick an option) in a message or an ephemeral message, with
        its checkbox groups ticked as ``ticked`` says (block_id to option values; a group
        not named is as drawn)."""
        chan = self._channel_for(user_id, channel)
        message = self._ws.message(chan.id, message_ts)
        ephemeral = self._ws.find_ephemeral(message_ts)
        if message is not None:
            blocks, echo, is_ephemeral = message.blocks, self._ws.to_slack(message), False
        elif ephemeral is not None and ephemeral.user == user_id:
            blocks, echo, is_ephemeral = ephemeral.blocks, ephemeral.to_slack(), True
        else:
            raise UserActionError(f"no message {message_ts} in {channel}")
        found = find_element(blocks, action_id=action_id, block_id=block_id)
        if found is None:
            raise UserActionError(f"no element {action_id!r} in message {message_ts}")
        block, element = found
        response_url = self._response_urls.issue(
            user_id,
            chan.id,
            message_ts=None if is_ephemeral else message_ts,
            ephemeral_id=message_ts if is_ephemeral else None,
        )
        payload = self._payloads.message_actions(
            user_id,
            channel=chan,
            message=echo,
            is_ephemeral=is_ephemeral,
            action=Payloads.action(block, element, selected=self._selected(element, value)),
            trigger_id=self._triggers.issue(user_id),
            response_url=response_url,
            state=message_state(blocks, ticked or {}),
        )
        ack = await self._delivery.deliver(Outbound(kind="interactive", payload=payload))
        self._report(user_id, ack, what="Your click", channel=chan.id)
        return ack

    async def post_message(
        self, user_id: str, *, channel: str, text: str, thread_ts: str | None = None
    ) -> tuple[Message, Ack | None]:
        """Post as the user; a mention of the bot is delivered as an `app_mention` event.

        Typed `@name`s and `#channel`s are stored, and delivered, as Slack's `<@U...>` ids.
        """
        chan = self._channel_for(user_id, channel)
        text = escape_mentions(self._ws, text, labelled=False)
        message = self._ws.post(
            Message(
                channel=chan.id,
                ts=self._ws.ids.ts(),
                user=user_id,
                text=text,
                thread_ts=thread_ts,
                team=self._ws.team_id,
            )
        )
        bot = self._ws.app.bot_user_id
        if f"<@{bot}>" not in text or bot not in chan.members:
            return message, None
        event: JsonObject = {
            "type": "app_mention",
            "user": user_id,
            "text": text,
            "ts": message.ts,
            "channel": chan.id,
            "event_ts": message.ts,
            "team": self._ws.team_id,
        }
        if thread_ts:
            event["thread_ts"] = thread_ts
        outbound = Outbound(kind="events_api", payload=self._payloads.event_callback(event))
        return message, await self._delivery.deliver(outbound)

    async def slash_command(
        self, user_id: str, *, channel: str, command: str, text: str = ""
    ) -> Ack:
        """Run `/command text` in a channel; the ack body becomes the command's reply.

        For an escaped command (`should_escape: true`) typed `@name`s and `#channel`s reach
        the app as `<@U...|name>` and the like, as Slack sends them.
        """
        chan = self._channel_for(user_id, channel)
        if command == "/invite":
            return await self._invite(user_id, chan, text)
        if command not in self._ws.app.commands:
            raise UserActionError(
                f"{command} is not a valid command; the app has {', '.join(self._ws.app.commands)}"
            )
        if command in self._ws.app.escaped_commands:
            text = escape_mentions(self._ws, text, labelled=True)
        response_url = self._response_urls.issue(user_id, chan.id)
        fields = self._payloads.slash_command(
            user_id,
            channel=chan,
            command=command,
            text=text,
            trigger_id=self._triggers.issue(user_id),
            response_url=response_url,
        )
        outbound = Outbound(kind="slash_commands", payload=fields, accepts_response_payload=True)
        ack = await self._delivery.deliver(outbound)
        self._report(user_id, ack, what=command, channel=chan.id)
        if ack.status == "acked" and ack.body:
            try:
                self._response_urls.apply(
                    Reply.model_validate(ack.body), user_id=user_id, channel=chan.id
                )
            except (ValidationError, SlackApiFailure) as exc:
                self._ws.notify(
                    user_id, f"{command}: the app's reply was invalid ({exc}).", channel=chan.id
                )
        return ack

    async def _invite(self, user_id: str, chan: Channel, text: str) -> Ack:
        """Slack's own ``/invite @app`` in a public channel: the app's bot joins it (the
        sandbox's people are members of their channels from the start), and the app gets
        Slack's ``member_joined_channel`` event for its bot user."""
        bot = self._ws.app.bot_user_id
        if escape_mentions(self._ws, text.strip(), labelled=False) != f"<@{bot}>":
            raise UserActionError(f"name the app to invite: /invite @{self._ws.app.bot_name}")
        if chan.is_im or chan.is_mpim:
            raise UserActionError("/invite adds the app to a channel, not to a direct message")
        joined = self._ws.add_bot(chan.id)
        said = "was added to" if joined else "is already in"
        self._ws.notify(user_id, f"@{self._ws.app.bot_name} {said} #{chan.name}.", channel=chan.id)
        if not joined:
            return Ack(status="acked")
        event: JsonObject = {
            "type": "member_joined_channel",
            "user": bot,
            "channel": chan.id,
            "channel_type": "C",
            "team": self._ws.team_id,
            "inviter": user_id,
        }
        outbound = Outbound(kind="events_api", payload=self._payloads.event_callback(event))
        await self._delivery.deliver(outbound)  # Slack's invite holds, whatever the app answers
        return Ack(status="acked")

    # -- views -----------------------------------------------------------------

    def _own_view(self, user_id: str, view_id: str) -> View:
        self._ws.require_user(user_id)
        view = self._ws.view(view_id)
        if view is None or view.user != user_id:
            raise UserActionError(f"{user_id} has no open view {view_id!r}")
        return view

    async def click_in_view(
        self,
        user_id: str,
        *,
        view_id: str,
        action_id: str,
        block_id: str | None = None,
        value: str | None = None,
    ) -> Ack:
        """Click a button in a modal or the Home tab (container type `view`)."""
        view = self._own_view(user_id, view_id)
        found = find_element(view.spec.get("blocks") or [], action_id=action_id, block_id=block_id)
        if found is None:
            raise UserActionError(f"no element {action_id!r} in view {view_id}")
        block, element = found
        payload = self._payloads.view_actions(
            user_id,
            view=view.to_slack(),
            action=Payloads.action(block, element, selected=self._selected(element, value)),
            trigger_id=self._triggers.issue(user_id),
        )
        ack = await self._delivery.deliver(Outbound(kind="interactive", payload=payload))
        self._report(user_id, ack, what="Your click")
        return ack

    async def submit_view(self, user_id: str, *, view_id: str, values: Submitted) -> Ack | None:
        """Submit the modal on top; `None` when the client itself refused (required fields)."""
        view = self._own_view(user_id, view_id)
        stack = self._ws.modals(user_id)
        if not stack or stack[-1].id != view_id:
            raise UserActionError(f"view {view_id} is not the modal on screen")
        blocks: Sequence[JsonObject] = view.spec.get("blocks") or []
        state, missing = state_values(blocks, values)
        if missing:
            self._ws.update_view(view, errors=missing)
            return None
        payload = self._payloads.view_submission(
            user_id,
            view=view.to_slack(state_values=state),
            trigger_id=self._triggers.issue(user_id),
        )
        outbound = Outbound(kind="interactive", payload=payload, accepts_response_payload=True)
        ack = await self._delivery.deliver(outbound)
        self._report(user_id, ack, what="Submitting the form")
        if ack.status == "acked":
            self._apply_response_action(view, ack.body or {})
        return ack

    def _apply_response_action(self, view: View, body: JsonObject) -> None:
        action = body.get("response_action")
        try:
            if action == "errors":
                errors = body.get("errors")
                self._ws.update_view(
                    view,
                    errors={
                        str(k): str(v)
                        for k, v in dict(errors if isinstance(errors, dict) else {}).items()
                    },
                )
            elif action == "update":
                self._ws.update_view(view, spec=checked_view(body.get("view")))
            elif action == "push":
                self._ws.push_modal(view.user, checked_view(body.get("view")))
            elif action == "clear":
                self._ws.clear_modals(view.user)
            else:
                self._ws.close_modal(view)
        except SlackApiFailure as exc:
            log.warning("app answered view_submission with an invalid view: %s", exc.code)
            self._ws.notify(view.user, "The app answered with an invalid view.")

    async def close_view(self, user_id: str, *, view_id: str) -> Ack | None:
        """Close a modal with its Close button; the app hears of it only with notify_on_close."""
        view = self._own_view(user_id, view_id)
        self._ws.close_modal(view)
        if not view.notify_on_close:
            return None
        payload = self._payloads.view_closed(user_id, view=view.to_slack(), is_cleared=False)
        return await self._delivery.deliver(Outbound(kind="interactive", payload=payload))

    async def open_home(self, user_id: str) -> Ack:
        """Open the app's Home tab: an `app_home_opened` event for the bot's DM with the user."""
        self._ws.require_user(user_id)
        dm = self._ws.open_dm(user_id)
        ts = self._ws.ids.ts()
        event: JsonObject = {
            "type": "app_home_opened",
            "user": user_id,
            "channel": dm.id,
            "tab": "home",
            "event_ts": ts,
        }
        home = self._ws.home(user_id)
        if home is not None:
            event["view"] = home.to_slack()
        outbound = Outbound(kind="events_api", payload=self._payloads.event_callback(event))
        await self._delivery.deliver(outbound)  # Slack's invite holds, whatever the app answers
        return Ack(status="acked")
