"""Redis goes away under a running bot: decisions are refused with a clear message and
nothing is lost; when Redis is back, the same click goes through."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import ALICE, Harness

from bot import ids
from bot.refusals import STORAGE_DOWN
from storage import EmbeddedRedis, Storage, connect


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedRedis]:
    """A Redis of this module's own, which its tests stop and start again."""
    own = EmbeddedRedis(tmp_path / "redis")
    own.start()
    yield own
    own.stop()


@pytest.fixture
async def storage(server: EmbeddedRedis, key_prefix: str) -> AsyncIterator[Storage]:
    store = await connect(server.url, prefix=key_prefix)
    yield store
    await store.close()


async def _stored(storage: Storage, record_id: str) -> str:
    record = await storage.queries.get(record_id)
    assert record is not None
    return json.dumps(record.model_dump(mode="json"), sort_keys=True)


async def test_a_click_while_redis_is_down_is_refused_and_works_once_it_is_back(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(storage, bot.record_id(value))

    server.stop()
    response = await bot.click(ids.APPROVE, value, user=ALICE)
    assert response.status == 200  # Slack got its ack; the click's fate is told privately
    await bot.slack.wait_calls("chat.postEphemeral")
    [refusal] = bot.slack.called("chat.postEphemeral")
    assert refusal["user"] == ALICE and refusal["text"] == STORAGE_DOWN

    server.start()
    assert await _stored(storage, bot.record_id(value)) == before
    assert bot.tool_log.calls == []
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 2 file(s)" in await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a", "/tmp/b"]}]


async def test_a_modal_decision_while_redis_is_down_shows_the_problem_in_the_modal(
    make_bot: Any, server: EmbeddedRedis, storage: Storage
) -> None:
    bot: Harness = await make_bot()
    value = await bot.start()
    before = await _stored(storage, bot.record_id(value))

    server.stop()
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert status == 200
    assert json.loads(body) == {
        "response_action": "errors",
        "errors": {ids.INPUT_BLOCK: STORAGE_DOWN},
    }

    server.start()
    assert await _stored(storage, bot.record_id(value)) == before
    status, body = await bot.submit(ids.DENY_VIEW, value, user=ALICE, text="not today")
    assert status == 200 and body == ""
    assert await bot.finished() == "Finished: done: not today"
    assert bot.tool_log.calls == []
