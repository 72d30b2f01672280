"""What the log leaves out: secrets slack-sdk and aiohttp quote in a message they log or
in an error they raise, which a traceback then prints."""

from __future__ import annotations

import logging
import re

from agent_runtime.shown_urls import SCHEME, shown_url


class RedactFilter(logging.Filter):
    """Leaves out the ticket of a Socket Mode address, which slack-sdk logs at DEBUG, and
    the path of a ``response_url``, which it logs as it sends or retries there, and in each
    Socket Mode envelope it logs whole (with the payload's verification token): for a
    while either lets whoever holds it connect, or answer, as the app."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _TICKET.sub(r"\1(redacted)", message)
        if record.name.startswith(("slack_sdk.webhook", "slack_sdk.socket_mode")):
            redacted = _URL_PATH.sub(r"\1(redacted)", redacted)
            redacted = _VERIFICATION_TOKEN.sub(r"\1(redacted)", redacted)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def redacted(text: str) -> str:
    """``text`` (a traceback) without Slack tokens, a Socket Mode ticket, a URL's
    credentials, query string or fragment, nor the path of a Slack ``response_url`` or
    incoming webhook: an error may quote any of them, and the code raising it is not ours."""
    text = _TOKEN.sub(r"\1(redacted)", _TICKET.sub(r"\1(redacted)", text))
    return _URL.sub(_shown, text)


_TICKET = re.compile(r"(ticket=)[^&'\"\s]+")
_URL_PATH = re.compile(r"(https?:(?:\\*/){2}[^/\\\s'\"]+\\*/)[^\s'\",]+")
"""A URL's path, also where JSON escapes its slashes (as Slack writes them)."""
_VERIFICATION_TOKEN = re.compile(r"(\\*\"token\\*\":\s*\\*\")[^\"\\]+")
"""The verification token every payload Slack sends carries, as a JSON field."""
_TOKEN = re.compile(r"\b((?:xoxe\.)?xox[a-z]-|xapp-)[A-Za-z0-9-]+")
_URL = re.compile(SCHEME + r"[^\s'\"]+")
_SLACK_HOOKS = "hooks.slack.com"
_HOOK_PATHS = ("commands/", "actions/", "services/")
"""The paths of Slack's response_urls and incoming webhooks: the path is the secret. A
stand-in for Slack (``SIGNOFF_SLACK_API_URL``) may serve them on another host."""


def _shown(found: re.Match[str]) -> str:
    url = shown_url(found.group())
    scheme, _, rest = url.partition("://")
    place, slash, path = rest.partition("/")
    hook = place.rsplit(":", 1)[0] == _SLACK_HOOKS or path.startswith(_HOOK_PATHS)
    return f"{scheme}://{place}/(redacted)" if slash and path and hook else url
