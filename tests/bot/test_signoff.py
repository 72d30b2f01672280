"""``signoff.start``: a run started from Python is posted, then decided and resumed by the bot."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from fakes import BOT_TOKEN, FakeSlack
from harness import ALICE, CAROL, CHANNEL, Harness

import signoff
from bot.ui import ids


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, slack: FakeSlack, redis_url: str, key_prefix: str) -> None:
    for name, value in {
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SIGNOFF_SLACK_API_URL": slack.api_url,
        "REDIS_URL": redis_url,
        "SIGNOFF_REDIS_PREFIX": key_prefix,
        "SIGNOFF_AGENTS": "cleanup_agents",
    }.items():
        monkeypatch.setenv(name, value)


async def test_start_by_name_posts_the_interrupt_and_the_bot_resumes_it(
    env: None, make_bot: Any
) -> None:
    bot: Harness = await make_bot()
    bot.clock.current = datetime.now(UTC)  # signoff.start stamps records with the real time
    result = await signoff.start("cleanup", "tidy", channel=CHANNEL, requested_by=CAROL)
    assert result.stop_reason == "interrupt" and len(result.interrupts) == 1
    [post] = bot.slack.called("chat.postMessage")
    assert post["channel"] == CHANNEL and f"<@{CAROL}>" in str(post["blocks"])

    value = post["blocks"][-1]["elements"][0]["value"]
    await bot.click(ids.APPROVE, value, user=ALICE)
    assert "deleted 1 file(s)" in await bot.finished()
    assert bot.tool_log.calls == [{"paths": ["/tmp/a"]}]


async def test_start_with_a_spec_needs_no_agents_module(
    env: None, make_bot: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SIGNOFF_AGENTS")
    bot: Harness = await make_bot()
    spec = bot.services.registry.spec("cleanup")
    assert spec is not None
    result = await signoff.start(spec, "tidy", channel=CHANNEL, requested_by=CAROL)
    assert result.stop_reason == "interrupt"
    assert len(bot.slack.called("chat.postMessage")) == 1


async def test_an_unknown_agent_is_a_clear_error(env: None) -> None:
    with pytest.raises(signoff.BotError, match="no agent named 'nope'"):
        await signoff.start("nope", "tidy", channel=CHANNEL, requested_by=CAROL)
