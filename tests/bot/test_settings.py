"""Settings from the environment: one line naming a bad setting, tokens never shown."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakes import BOT_TOKEN, FakeSlack

from bot.errors import ConfigError
from bot.process.settings import Settings
from bot.process.wiring import connect_storage, open_services
from bot.services.callbacks import CallbackPolicy
from bot.services.limits import ApiLimits
from storage import default_data_dir
from storage.audit import AuditEntry


def test_an_empty_environment_gives_the_defaults() -> None:
    settings = Settings.from_env({})
    assert settings.bot_token is None and settings.app_token is None
    assert settings.redis_url is None and settings.workers == 2 and settings.port == 3000
    assert settings.worker_nice == 19 and settings.host == "0.0.0.0"
    assert settings.redis_prefix == "signoff" and settings.audit_entries == 100_000
    assert settings.api_open_calls == 32 and settings.api_pending_requests == 1000


def test_the_embedded_redis_keeps_its_data_under_xdg_data_home_else_local_share(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "signoff" / "redis"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_data_dir() == tmp_path / "home" / ".local" / "share" / "signoff" / "redis"


async def test_the_api_limits_reach_the_services_from_their_settings(
    slack: FakeSlack, redis_url: str, key_prefix: str
) -> None:
    settings = Settings.from_env(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SIGNOFF_SLACK_API_URL": slack.api_url,
            "REDIS_URL": redis_url,
            "SIGNOFF_REDIS_PREFIX": key_prefix,
            "SIGNOFF_API_OPEN_CALLS": "4",
            "SIGNOFF_API_PENDING_REQUESTS": "50",
        }
    )
    async with open_services(settings, specs=[]) as services:
        assert services.limits == ApiLimits(open_calls=4, pending_requests=50)


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"SLACK_BOT_TOKEN": "xoxp-user-token"}, "SLACK_BOT_TOKEN"),
        ({"SLACK_APP_TOKEN": "xoxb-1"}, "SLACK_APP_TOKEN"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"SIGNOFF_WORKERS": "many"}, "SIGNOFF_WORKERS"),
        ({"SIGNOFF_PORT": "99999"}, "SIGNOFF_PORT"),
        ({"SIGNOFF_WORKER_NICE": "-5"}, "SIGNOFF_WORKER_NICE"),
        ({"SIGNOFF_API_TOKEN": "short"}, "SIGNOFF_API_TOKEN"),
        ({"SIGNOFF_CHANNEL": "#ops"}, "SIGNOFF_CHANNEL"),
        ({"SIGNOFF_SLACK_API_URL": "slack.com/api"}, "SIGNOFF_SLACK_API_URL"),
        ({"SIGNOFF_ADMINS": "alice"}, "SIGNOFF_ADMINS"),
        ({"SIGNOFF_AUDIT_ENTRIES": "10"}, "SIGNOFF_AUDIT_ENTRIES"),
        ({"SIGNOFF_API_OPEN_CALLS": "0"}, "SIGNOFF_API_OPEN_CALLS"),
        ({"SIGNOFF_API_PENDING_REQUESTS": "many"}, "SIGNOFF_API_PENDING_REQUESTS"),
        ({"SIGNOFF_REDIS_PREFIX": "team:signoff"}, "SIGNOFF_REDIS_PREFIX"),
        ({"SIGNOFF_WEBHOOK_ALLOW": "http://hooks.internal:8080"}, "SIGNOFF_WEBHOOK_ALLOW"),
    ],
)
def test_a_bad_setting_is_one_line_naming_it(env: dict[str, str], name: str) -> None:
    with pytest.raises(ConfigError) as info:
        Settings.from_env(env)
    message = str(info.value)
    assert message.startswith(f"{name}: ") and "\n" not in message


@pytest.mark.parametrize("entry", ["127.0.0.1:80800", "hooks.internal:0", "[::1]:08080"])
def test_a_webhook_host_with_a_port_no_url_can_have_is_refused_naming_it(entry: str) -> None:
    """An allowed host whose port no webhook URL can carry would never match one."""
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"SIGNOFF_WEBHOOK_ALLOW": f"hooks.internal, {entry}"})
    assert str(info.value) == (
        f"SIGNOFF_WEBHOOK_ALLOW: {entry!r}: the port must be a number from 1 to 65535, "
        "without leading zeros"
    )


def test_tokens_never_appear_in_repr_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    secret, api_token = "xoxb-1234-very-secret", "api-token-for-the-nightly-jobs"
    settings = Settings.from_env(
        {
            "SLACK_BOT_TOKEN": secret,
            "SLACK_SIGNING_SECRET": "shh-signing",
            "SIGNOFF_API_TOKEN": api_token,
            "SIGNOFF_PORT": "1",
            "REDIS_URL": "redis://:redis-password-here@redis.internal:6379/0",
        }
    )
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("bot").info("settings: %s %r", settings, settings)
    for value in (secret, "shh-signing", api_token, "redis-password-here"):
        assert value not in caplog.text and value not in repr(settings)
        assert value not in str(settings.model_dump())
    with pytest.raises(ConfigError) as info:
        Settings.from_env({"SLACK_BOT_TOKEN": "xoxa-leaky-secret"})
    assert "leaky" not in str(info.value)


def test_modes_name_what_is_missing_and_where_to_find_it() -> None:
    with pytest.raises(ConfigError, match=r"^SLACK_APP_TOKEN") as info:
        Settings.from_env({}).require_socket()
    assert "create an app-level token (xapp-) with connections:write" in str(info.value)
    with pytest.raises(ConfigError, match=r"^SLACK_BOT_TOKEN") as info:
        Settings.from_env({"SLACK_APP_TOKEN": "xapp-1"}).require_socket()
    assert "Bot User OAuth Token (xoxb-) from the app's OAuth & Permissions" in str(info.value)
    with pytest.raises(ConfigError, match=r"^SLACK_SIGNING_SECRET") as info:
        Settings.from_env({"SLACK_BOT_TOKEN": "xoxb-1"}).require_http()
    assert "Signing Secret from the app's Basic Information page" in str(info.value)
    assert Settings.from_env({"SIGNOFF_SLACK_API_URL": "http://127.0.0.1:9/api"}).slack_api_url == (
        "http://127.0.0.1:9/api/"
    )


async def test_the_audit_trail_keeps_about_as_many_entries_as_set(
    redis_url: str, key_prefix: str
) -> None:
    env = {"REDIS_URL": redis_url, "SIGNOFF_REDIS_PREFIX": key_prefix}
    settings = Settings.from_env({**env, "SIGNOFF_AUDIT_ENTRIES": "1000"})
    assert Settings.from_env(env).audit_entries == 100_000
    storage = await connect_storage(settings)
    try:
        for n in range(3000):
            entry = AuditEntry(
                event="tool_ran", record_id="", run_id=f"run_{n}", at=datetime.now(UTC)
            )
            await storage.audit.append(entry)
        kept = await storage.client.raw.xlen(storage.keys.audit_stream(0))
        # Trimmed as Redis trims (whole nodes, "~"): at least the setting, never all.
        assert 1000 <= kept < 1500
    finally:
        await storage.close()


def test_a_short_api_token_is_refused_in_characters() -> None:
    with pytest.raises(ConfigError, match="SIGNOFF_API_TOKEN: use at least 24 characters"):
        Settings.from_env({"SIGNOFF_API_TOKEN": "short"})
    token = Settings.from_env({"SIGNOFF_API_TOKEN": "x" * 24}).api_token
    assert token is not None and token.get_secret_value() == "x" * 24


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("redis://:s3cret@localhost:notaport/0", "Port could not be cast"),
        ("redis://:s3cret@localhost:99999/0", "Port out of range"),
        ("redis://:s3cret@localhost:6379/0?foo=bar", "unexpected keyword argument 'foo'"),
        ("redis://:s3cret@localhost/0?socket_timeout=abc", "Invalid value for 'socket_timeout'"),
    ],
)
def test_a_malformed_redis_url_stops_startup_naming_redis_url_not_its_password(
    url: str, why: str, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"^REDIS_URL: not a usable Redis URL") as info:
        Settings.from_env({"REDIS_URL": url})
    assert why in str(info.value) and "s3cret" not in str(info.value)
    (tmp_path / "ca.pem").write_text("")
    good = f"rediss://:s3cret@redis.example:6380/0?ssl_ca_certs={tmp_path}/ca.pem"
    redis_url = Settings.from_env({"REDIS_URL": good}).redis_url
    assert redis_url is not None and redis_url.get_secret_value() == good


def test_an_ipv6_webhook_host_is_allowed_as_bracketed() -> None:
    hosts = Settings.from_env({"SIGNOFF_WEBHOOK_ALLOW": "[::1]:8080, hooks.internal"})
    policy = CallbackPolicy(allow=hosts.webhook_hosts)
    assert policy.refusal("http://[::1]:8080/hook") is None
    assert policy.refusal("http://[::1]:9090/hook") is not None


@pytest.mark.parametrize(
    "url", ["redis://:s3cret@localhost:6379/signoff", "rediss://:s3cret@redis.example/0/1"]
)
def test_a_database_that_is_not_a_number_is_refused_not_taken_for_db_0(url: str) -> None:
    with pytest.raises(ConfigError, match=r"^REDIS_URL: the db must be a number") as info:
        Settings.from_env({"REDIS_URL": url})
    assert "s3cret" not in str(info.value)
    assert Settings.from_env({"REDIS_URL": "redis://localhost:6379/"}).redis_url
    assert Settings.from_env({"REDIS_URL": "redis://localhost:6379/1 "}).redis_url  # as before


@pytest.mark.parametrize(
    "url",
    [
        "rediss://:s3cret@redis.example:6380/0?ssl_ca_certs={dir}/server-ca.pem",
        "rediss://:s3cret@redis.example:6380/0?ssl_certfile={dir}/client.pem",
        "rediss+cluster://:s3cret@node1:6379/?ssl_ca_certs={dir}/server-ca.pem",
    ],
)
def test_a_tls_file_that_is_not_there_is_named_not_taken_for_an_unreachable_server(
    url: str, tmp_path: Path
) -> None:
    """redis-py would say "cannot connect: No such file or directory", as if the server were."""
    with pytest.raises(ConfigError, match=r"^REDIS_URL: ") as info:
        Settings.from_env({"REDIS_URL": url.format(dir=tmp_path)})
    said = str(info.value)
    assert f"{tmp_path}/" in said and "no such file" in said and "s3cret" not in said
    for name in ("server-ca.pem", "client.pem"):
        (tmp_path / name).write_text("")
    assert Settings.from_env({"REDIS_URL": url.format(dir=tmp_path)}).redis_url


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Tops3cret#x@redis.internal:6379/0",
        "redis://default:Tops3cret?x@redis.internal:6379/0",
        "redis://:ab/Tops3cret@redis.internal:6379/0",
        "rediss+cluster://app:Tops3cret#x@node1:6379/",
    ],
)
def test_a_password_with_a_character_not_percent_encoded_is_never_shown(url: str) -> None:
    """Unencoded, ``#`` ``?`` and ``/`` end the address early, and what follows them (the
    rest of the password) would be read as a port, a path or a fragment."""
    with pytest.raises(ConfigError, match=r"^REDIS_URL: ") as info:
        Settings.from_env({"REDIS_URL": url})
    said = str(info.value)
    assert "Tops3cret" not in said and "@redis.internal" not in said, said
    assert "percent-encode" in said, said


def test_values_read_from_a_file_with_its_trailing_newline_are_taken_without_it() -> None:
    """Secrets mounted from files (Kubernetes, Docker) often end in a newline: kept, the
    app token would break the request header and the signing secret every signature."""
    settings = Settings.from_env(
        {
            "SLACK_BOT_TOKEN": "xoxb-1-bot\n",
            "SLACK_APP_TOKEN": " xapp-1-app\r\n",
            "SLACK_SIGNING_SECRET": "0123abcd\n",
            "SIGNOFF_API_TOKEN": "x" * 24 + "\n",
            "REDIS_URL": "redis://localhost:6379/0\n",
            "SIGNOFF_PORT": "\n",
        }
    )
    secrets = (settings.bot_token, settings.app_token, settings.signing_secret)
    assert [s.get_secret_value() if s else None for s in secrets] == [
        "xoxb-1-bot",
        "xapp-1-app",
        "0123abcd",
    ]
    assert settings.api_token is not None and settings.api_token.get_secret_value() == "x" * 24
    assert settings.redis_url is not None and settings.port == 3000
    assert settings.redis_url.get_secret_value() == "redis://localhost:6379/0"
