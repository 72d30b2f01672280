"""``signoff token`` with one client's stored record damaged: it is named as its own field
of the hash every client shares, and revoked alone."""

from __future__ import annotations

import pytest
from cli_procs import bot_env, finished_signoff
from fakes import FakeSlack

from storage import connect


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


async def test_a_damaged_client_is_named_with_its_own_field_and_revoked_alone(
    env: dict[str, str], redis_url: str, key_prefix: str
) -> None:
    """One client's record is cut short in the hash every client shares: ``token list``
    says to remove that field (removing the key, as for other records, would revoke every
    client), and ``token revoke`` removes it and its token, the other client kept."""
    for name in ("nightly", "backup"):
        code, _, err = await finished_signoff("token", "create", name, env=env)
        assert code == 0, err
    storage = await connect(redis_url, prefix=key_prefix)
    clients = storage.keys.api_clients
    try:
        await storage.client.raw.hset(clients, "nightly", '{"name":"nightly","chan')
        code, _, err = await finished_signoff("token", "list", env=env)
        assert code != 0 and f"field 'nightly' of record {clients}" in err, err
        assert f"delete or repair that field alone (HDEL {clients} nightly)" in err, err
        revoked = await finished_signoff("token", "revoke", "nightly", env=env)
        assert revoked[:2] == (0, "revoked nightly\n"), revoked
        assert await storage.client.raw.hvals(storage.keys.api_tokens) == ["backup"]
    finally:
        await storage.close()
    code, out, err = await finished_signoff("token", "list", env=env)
    assert code == 0 and out.startswith("backup\t") and len(out.splitlines()) == 1, err
