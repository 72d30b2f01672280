"""Where a webhook may go: a client's own callback URL, never an address inside the network
(however its name resolves) unless its host is allowed."""

from __future__ import annotations

import asyncio
import json
import socket
from datetime import UTC, datetime

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult
from cli_procs import bot_env, start_signoff
from fakes import FakeSlack
from harness import ALICE, CHANNEL
from webhook_receiver import Hooked

from bot.api.request_records import REQUESTS_PATH
from bot.api.webhooks import PublicResolver, WebhookSender
from bot.services.callbacks import CallbackPolicy, forbidden_address
from signoff.webhooks import verify
from storage.webhooks import WebhookDelivery


async def test_a_name_that_resolves_to_a_metadata_address_is_never_connected_to() -> None:
    class Rebound(AbstractResolver):
        """A DNS name re-pointed at the metadata service."""

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            found = ("169.254.169.254", "::ffff:169.254.1.1")
            return [_result(host, address, port) for address in found]

        async def close(self) -> None:
            pass

    resolver = PublicResolver(CallbackPolicy(), Rebound())
    with pytest.raises(OSError, match="addresses webhooks may not reach"):
        await resolver.resolve("hooks.example.com", 443)
    assert forbidden_address("fd00:ec2::254") and not forbidden_address("203.0.113.7")


def _result(host: str, address: str, port: int) -> ResolveResult:
    return {
        "hostname": host,
        "host": address,
        "port": port,
        "family": socket.AF_INET,
        "proto": 0,
        "flags": 0,
    }


async def test_a_clients_own_callback_url_serves_its_requests_that_name_none(
    hooked: Hooked,
) -> None:
    hooked.receiver.status = 200
    client, token = await hooked.bot.services.storage.api_clients.create(
        "deploys", callback_url=hooked.hook, now=datetime.now(UTC)
    )
    body = {"title": "Deploy", "channel": CHANNEL, "approvers": [ALICE]}
    headers = {"Authorization": f"Bearer {token}"}
    async with hooked.http.post(hooked.base + REQUESTS_PATH, json=body, headers=headers) as r:
        made = await r.json()
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    await hooked.got(1)
    _, sent, delivered = hooked.receiver.got[0]
    assert json.loads(delivered)["request"]["id"] == made["id"]
    assert verify(delivered, sent, client.webhook_secret, now=hooked.bot.clock.now().timestamp())


async def test_a_clients_own_callback_url_refused_is_told_as_the_clients_not_the_bodys(
    hooked: Hooked,
) -> None:
    """A job that named no callback URL learns the refused one is its client's, set when
    the token was made, not a field of what it sent."""
    _, token = await hooked.bot.services.storage.api_clients.create(
        "deploys", callback_url="https://10.9.9.9/hook", now=datetime.now(UTC)
    )
    body = {"title": "Deploy", "channel": CHANNEL, "approvers": [ALICE]}
    headers = {"Authorization": f"Bearer {token}"}
    async with hooked.http.post(hooked.base + REQUESTS_PATH, json=body, headers=headers) as r:
        assert r.status == 400
        refused = await r.json()
    assert "field" not in refused
    assert refused["error"].startswith(
        "client 'deploys' has a webhook URL (signoff token create --callback-url) refused: "
        "10.9.9.9 is an internal address"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.5/hook",
        "https://[::1]:6443/api",
        "https://localhost:9200/_shutdown",
        "https://100.100.100.200/latest/meta-data",
        "https://metadata.google.internal./computeMetadata",
        # IP addresses spelled so that only the client's IDNA step makes them one.
        "https://\uff11\uff10.\uff10.\uff10.\uff15:6443/api",
        "https://169\u3002254\u3002169\u3002254/latest/meta-data/",
        # IPv6 forms of inside addresses: site-local, 6to4 and NAT64 of the metadata one.
        "https://[fec0::1]/",
        "https://[2002:a9fe:a9fe::1]/",
        "https://[64:ff9b::a9fe:a9fe]/",
    ],
)
def test_a_webhook_never_goes_inside_the_network_unless_its_host_is_allowed(url: str) -> None:
    assert CallbackPolicy().refusal(url) is not None
    assert CallbackPolicy().refusal("https://hooks.example.com/signoff") is None
    allowed = CallbackPolicy(allow=frozenset({"10.0.0.5"}))
    assert allowed.refusal("https://10.0.0.5/hook") is None


def test_a_refused_url_names_the_entry_the_allow_list_needs_port_and_all() -> None:
    """Another port of an allowed host is refused: the refusal names that port, not the
    host the operator already allowed."""
    allowed = CallbackPolicy(allow=frozenset({"127.0.0.1:8080"}))
    assert allowed.refusal("http://127.0.0.1:8080/hook") is None
    assert allowed.refusal("http://127.0.0.1:9000/hook") == (
        "127.0.0.1 is an internal address: allow 127.0.0.1:9000 in the Signoff server's "
        "SIGNOFF_WEBHOOK_ALLOW (its setting, not the asking job's)"
    )
    assert CallbackPolicy().refusal("http://hooks.example.com/signoff") == (
        "use https, or allow hooks.example.com in the Signoff server's "
        "SIGNOFF_WEBHOOK_ALLOW (its setting, not the asking job's)"
    )


async def test_a_stored_delivery_to_an_address_now_refused_is_dropped_unsent(
    hooked: Hooked,
) -> None:
    """A delivery stored under an older check names the metadata address with ideographic
    full stops: the client would connect to it without asking the resolver, so the sender
    checks the URL again before sending."""
    now = hooked.bot.clock.now()
    delivery = WebhookDelivery(
        id="d-1",
        url="https://169\u3002254\u3002169\u3002254/latest/meta-data/",
        client="key-rotation",
        event="request.approved",
        body="{}",
        created_at=now,
    )
    await hooked.bot.services.storage.webhooks.add(delivery, due=now)
    assert await WebhookSender(hooked.bot.services).send_due() == 0
    await hooked.settled("done")
    assert hooked.bot.services.metrics.webhooks == {"dropped": 1}


async def test_a_receiver_that_redirects_is_not_followed_and_the_log_says_why_it_retries(
    hooked: Hooked, caplog: pytest.LogCaptureFixture
) -> None:
    """A redirect could point anywhere, inside the network too: it is never followed, and
    the operator is told that, not only its status."""
    hooked.receiver.status = 307
    hooked.receiver.location = hooked.hook  # followed, the receiver would be asked again
    made = await hooked.ask()
    headers = {"Authorization": f"Bearer {hooked.token}"}
    async with hooked.http.post(f"{hooked.base}{made['status_url']}/withdraw", headers=headers):
        pass
    await hooked.got(1)
    await hooked.settled("retried")
    assert len(hooked.receiver.got) == 1
    told = [r.getMessage() for r in caplog.records if r.name == "bot.api.webhooks"]
    assert any("(307: a redirect, which webhooks never follow;" in m for m in told), told


async def test_a_name_that_resolves_inside_the_network_is_connected_to_only_if_allowed() -> None:
    class Internal(AbstractResolver):
        """A public-looking name that points at a private address."""

        async def resolve(
            self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
        ) -> list[ResolveResult]:
            return [_result(host, "10.0.0.5", port)]

        async def close(self) -> None:
            pass

    with pytest.raises(OSError, match="addresses webhooks may not reach"):
        await PublicResolver(CallbackPolicy(), Internal()).resolve("hooks.example.com", 443)
    allowed = CallbackPolicy(allow=frozenset({"hooks.example.com"}))
    [found] = await PublicResolver(allowed, Internal()).resolve("hooks.example.com", 443)
    assert found["host"] == "10.0.0.5"


@pytest.mark.parametrize(
    "url",
    ["https://ops:Hunter2xyz/tail@hooks.example.com/a", "https://:Hunter2xyz?t@hooks.example.com"],
)
def test_a_callback_url_refused_as_malformed_does_not_quote_its_password(url: str) -> None:
    """The refusal is printed by ``signoff token create`` and answered to the API client:
    a password holding an unencoded / reads as a port, and must not be quoted as one."""
    refused = CallbackPolicy().refusal(url)
    assert refused is not None and "Hunter2" not in refused and "percent-encode" in refused


async def test_token_create_refuses_an_internal_url_naming_its_own_setting_which_allows_it(
    slack: FakeSlack, redis_url: str, key_prefix: str
) -> None:
    """``signoff token create`` checks the URL against its own SIGNOFF_WEBHOOK_ALLOW, so the
    refusal says to set it there too, not only in the server's, which it never reads."""
    url = "http://127.0.0.1:8080/hook"
    env = bot_env(slack, redis_url, key_prefix)

    async def create(allow: str) -> tuple[int | None, str, str]:
        made = await start_signoff(
            *("token", "create", "local", "--callback-url", url),
            env={**env, "SIGNOFF_WEBHOOK_ALLOW": allow},
            stdout=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(made.communicate(), 60)
        return made.returncode, out.decode(), err.decode()

    code, out, err = await create("")
    assert (code, out) == (2, "")
    assert "allow 127.0.0.1:8080 in SIGNOFF_WEBHOOK_ALLOW, both for this command" in err, err
    code, out, err = await create("127.0.0.1:8080")
    assert code == 0 and out.startswith("SIGNOFF_TOKEN=sgn_"), err
