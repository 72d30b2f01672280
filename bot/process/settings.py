"""Settings from the environment, validated once at startup.

Names follow Slack's own examples (``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``,
``SLACK_APP_TOKEN``) plus ``REDIS_URL`` and ``SIGNOFF_*``. A bad value stops startup with
one line naming the variable; tokens are ``SecretStr`` so they never reach a log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from redis.asyncio.connection import AbstractConnection, Connection, parse_url

from bot.errors import ConfigError
from bot.services.limits import OPEN_CALLS, PENDING_REQUESTS
from storage.cluster import is_cluster_url, parse_cluster_url
from storage.hosts import credential_free
from storage.sentinel import SCHEME as SENTINEL_SCHEME
from storage.sentinel import parse_sentinel_url

_ENV_NAMES = {
    "bot_token": "SLACK_BOT_TOKEN",
    "signing_secret": "SLACK_SIGNING_SECRET",
    "app_token": "SLACK_APP_TOKEN",
    "api_token": "SIGNOFF_API_TOKEN",
    "redis_url": "REDIS_URL",
    "agents": "SIGNOFF_AGENTS",
    "channel": "SIGNOFF_CHANNEL",
    "slack_api_url": "SIGNOFF_SLACK_API_URL",
    "workers": "SIGNOFF_WORKERS",
    "worker_nice": "SIGNOFF_WORKER_NICE",
    "host": "SIGNOFF_HOST",
    "port": "SIGNOFF_PORT",
    "redis_prefix": "SIGNOFF_REDIS_PREFIX",
    "data_dir": "SIGNOFF_DATA_DIR",
    "webhook_allow": "SIGNOFF_WEBHOOK_ALLOW",
    "admins": "SIGNOFF_ADMINS",
    "audit_entries": "SIGNOFF_AUDIT_ENTRIES",
    "api_open_calls": "SIGNOFF_API_OPEN_CALLS",
    "api_pending_requests": "SIGNOFF_API_PENDING_REQUESTS",
}


def env_value(environ: Mapping[str, str], name: str) -> str | None:
    """``name``'s value without surrounding whitespace, such as the newline that ends a
    value mounted from a file or read by ``$(cat ...)``; None when unset or only whitespace."""
    return environ.get(name, "").strip() or None


def _token(prefix: str, value: SecretStr | None) -> SecretStr | None:
    if value is not None and not value.get_secret_value().startswith(prefix):
        raise ValueError(f"must start with {prefix!r}; copy it from the app settings page")
    return value


class Settings(BaseModel):
    """Everything the bot reads from the environment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bot_token: SecretStr | None = None
    signing_secret: SecretStr | None = None
    app_token: SecretStr | None = None
    # Turns on the runs API (bot/api/runs.py); long enough not to be guessed.
    api_token: SecretStr | None = None
    redis_url: SecretStr | None = None
    """Secret: it may carry the Redis (and the sentinels') password."""
    agents: str | None = None
    channel: str | None = None
    slack_api_url: str | None = None
    workers: int = Field(default=2, ge=0, le=64)
    # ``signoff worker`` yields the CPU to the acks of a ``serve`` on the same host: Slack
    # shows a click not acknowledged in 3 s as failed, while a decision can wait. At 19
    # it also takes Linux's idle scheduling class.
    worker_nice: int = Field(default=19, ge=0, le=19)
    host: str = "0.0.0.0"
    port: int = Field(default=3000, ge=0, le=65535)
    redis_prefix: str = "signoff"
    data_dir: str | None = None
    # Hosts (``host`` or ``host:port``, comma-separated) webhooks may reach over plain http.
    webhook_allow: str | None = None
    # User ids (comma-separated) who may withdraw anyone's pending request from its card.
    admins: str | None = None
    # How many audit entries Redis keeps (the oldest go first, about this many are kept).
    audit_entries: int = Field(default=100_000, ge=1_000, le=100_000_000)
    # How many calls one API client may hold open at once in one process (long-polls,
    # AG-UI streams, runs API starts): a leaked token cannot hold every connection.
    api_open_calls: int = Field(default=OPEN_CALLS, ge=1, le=100_000)
    # How many undecided requests one API client may have stored: a leaked token cannot
    # fill Redis (a request with items counts once per item).
    api_pending_requests: int = Field(default=PENDING_REQUESTS, ge=1, le=10_000_000)

    @field_validator("bot_token")
    @classmethod
    def _bot_token(cls, v: SecretStr | None) -> SecretStr | None:
        return _token("xoxb-", v)

    @field_validator("app_token")
    @classmethod
    def _app_token(cls, v: SecretStr | None) -> SecretStr | None:
        return _token("xapp-", v)

    @field_validator("api_token")
    @classmethod
    def _api_token(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and len(v.get_secret_value()) < 24:
            raise ValueError("use at least 24 characters (e.g. from `openssl rand -hex 24`)")
        return v

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, secret: SecretStr | None) -> SecretStr | None:
        if secret is not None:
            url = secret.get_secret_value()
            try:
                _check_redis_url(url)
            except ValueError as exc:  # a password cut apart may be quoted: not shown
                raise credential_free(exc, url) from None
        return secret

    @field_validator("slack_api_url")
    @classmethod
    def _api_url(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http(s) URL such as https://slack.com/api/")
        return v if v.endswith("/") else v + "/"

    @field_validator("channel")
    @classmethod
    def _channel(cls, v: str | None) -> str | None:
        if v is not None and not (v[:1] in "CGD" and v[1:].isalnum() and v.isupper()):
            raise ValueError("must be a channel id such as C0123ABCD (not a #name)")
        return v

    @field_validator("redis_prefix")
    @classmethod
    def _redis_prefix(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_.\-]{1,64}", v):
            raise ValueError("use 1-64 letters, digits or _ . - (such as signoff-staging)")
        return v

    @field_validator("webhook_allow")
    @classmethod
    def _webhook_allow(cls, v: str | None) -> str | None:
        for host in (h.strip() for h in (v or "").split(",")):
            if not host:
                continue
            entry = re.fullmatch(r"([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?", host)
            if entry is None:
                raise ValueError(
                    f"{host!r}: give host or host:port, comma-separated (e.g. "
                    "hooks.internal:8080), with no scheme or path"
                )
            port = entry[2]
            # A URL's port is matched as the number it is: 80800 or 08080 would match none.
            if port is not None and not (0 < int(port) < 65536 and str(int(port)) == port):
                raise ValueError(
                    f"{host!r}: the port must be a number from 1 to 65535, without leading zeros"
                )
        return v

    @field_validator("admins")
    @classmethod
    def _admins(cls, v: str | None) -> str | None:
        for user in (u.strip() for u in (v or "").split(",")):
            if user and not (user[:1] in "UW" and user[1:].isalnum() and user.isupper()):
                raise ValueError(f"{user!r} is not a user id such as U0123ABCD")
        return v

    @property
    def admin_ids(self) -> tuple[str, ...]:
        return tuple(u.strip() for u in (self.admins or "").split(",") if u.strip())

    @property
    def webhook_hosts(self) -> frozenset[str]:
        """The hosts of ``SIGNOFF_WEBHOOK_ALLOW``, lowercased; an IPv6 address unbracketed
        (``[::1]:8080`` as ``::1:8080``), as the callback check spells it."""
        return frozenset(
            h.strip().lower().replace("[", "").replace("]", "")
            for h in (self.webhook_allow or "").split(",")
            if h.strip()
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """Read and validate the settings; raise ``ConfigError`` naming the first bad one.
        Values are taken without surrounding whitespace, such as the newline that ends a
        secret mounted from a file; one that is only whitespace is unset (``env_value``)."""
        given = {field: env_value(environ, name) for field, name in _ENV_NAMES.items()}
        raw = {field: value for field, value in given.items() if value is not None}
        try:
            return cls(**raw)  # type: ignore[arg-type]
        except ValidationError as exc:
            first = exc.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else ""
            name = _ENV_NAMES.get(field, field)
            message = first["msg"].removeprefix("Value error, ")
            raise ConfigError(f"{name}: {message}") from None

    def require_http(self) -> None:
        """HTTP mode needs the signing secret whenever it talks to real Slack."""
        if self.bot_token is not None and self.signing_secret is None:
            raise ConfigError(
                "SLACK_SIGNING_SECRET: required with SLACK_BOT_TOKEN in HTTP mode; copy the "
                "Signing Secret from the app's Basic Information page (or run signoff socket)"
            )

    def require_socket(self) -> None:
        """Socket Mode needs both the app-level and the bot token."""
        if self.app_token is None:
            raise ConfigError(
                "SLACK_APP_TOKEN: required for Socket Mode; create an app-level token (xapp-) "
                "with connections:write on the app's Basic Information page"
            )
        if self.bot_token is None:
            raise ConfigError(
                "SLACK_BOT_TOKEN: required for Socket Mode; copy the Bot User OAuth Token "
                "(xoxb-) from the app's OAuth & Permissions page"
            )


def _check_redis_url(url: str) -> None:
    """A ValueError saying what is wrong with ``url``, when something is."""
    if url.startswith(f"{SENTINEL_SCHEME}://"):
        parse_sentinel_url(url)
    elif is_cluster_url(url):
        parse_cluster_url(url)
    elif not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(
            "must start with redis://, rediss://, unix://, redis+sentinel://, "
            "redis+cluster:// or rediss+cluster://"
        )
    else:
        _check_connection_url(url)
    _check_tls_files(url)


def _check_connection_url(url: str) -> None:
    """Build (not open) the connection ``url`` describes, as redis-py will: a bad port or
    an unknown or malformed option is a ValueError now, not a traceback at first use."""
    db = urlsplit(url).path.strip("/").strip()  # int(), as redis-py reads it, takes spaces
    if not url.startswith("unix://") and db and not db.isdigit():
        # redis-py would quietly use db 0 for it, another application's data perhaps.
        raise ValueError(f"the db must be a number, not {db!r} (such as /0)")
    try:
        options: dict[str, Any] = dict(parse_url(url))
        connection_class: type[AbstractConnection] = options.pop("connection_class", Connection)
        connection_class(**options)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a usable Redis URL: {exc}") from None


_TLS_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")


def _check_tls_files(url: str) -> None:
    """The CA and client certificate files ``url`` names exist: a missing one would
    otherwise fail every connection as if the server could not be reached."""
    options = parse_qs(urlsplit(url).query)
    for name in _TLS_FILES:
        for path in options.get(name, []):
            if not Path(path).is_file():
                raise ValueError(f"{name}: no such file {path!r} on this host")
