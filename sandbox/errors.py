"""Errors raised by the sandbox; every one derives from `SandboxError`."""


class SandboxError(Exception):
    """Base class for every error the sandbox raises."""


class SlackApiFailure(SandboxError):
    """A Web API call fails the way Slack fails it: `{"ok": false, "error": code}`."""

    def __init__(
        self,
        code: str,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        messages: list[str] | None = None,
    ):
        super().__init__(code if not messages else f"{code}: {'; '.join(messages)}")
        self.code = code
        self.status = status
        self.headers = headers or {}
        self.messages = messages or []  # Slack's `response_metadata.messages`


class UserActionError(SandboxError):
    """A simulated user did something the Slack client would not allow (unknown button, ...)."""
