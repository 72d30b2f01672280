"""The ``signoff`` command line, run as a real process."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis.asyncio as redis
from cli_procs import FAILING_BUILD, ROOT, bot_env, finished_signoff
from fakes import BOT_TOKEN, FakeSlack

from agent_runtime.interrupts import Interrupt
from agent_runtime.messages import ToolCall
from storage import ApproverPolicy, InterruptRecord, connect

RUN = ("run", "cleanup", "--channel", "C0OPS", "--input", "tidy", "--agents", "cleanup_agents")


@pytest.fixture
def env(slack: FakeSlack, redis_url: str, key_prefix: str) -> dict[str, str]:
    return bot_env(slack, redis_url, key_prefix)


async def test_run_posts_the_interrupt_to_the_channel(
    slack: FakeSlack, env: dict[str, str]
) -> None:
    code, out, err = await finished_signoff(*RUN, env=env)
    assert code == 0, err
    assert out.startswith("interrupt")
    posts = slack.called("chat.postMessage")
    assert len(posts) == 1 and posts[0]["channel"] == "C0OPS"
    assert BOT_TOKEN not in out + err


async def test_audit_prints_the_trail_as_json_lines(env: dict[str, str]) -> None:
    assert (await finished_signoff(*RUN, env=env))[0] == 0

    code, out, err = await finished_signoff("audit", env=env)
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["event"] for r in rows] == ["created", "posted"]
    assert rows[1]["channel"] == "C0OPS" and rows[0]["user_id"] == "cli"
    assert datetime.fromisoformat(rows[0]["at"]) <= datetime.fromisoformat(rows[1]["at"])
    code, out, _ = await finished_signoff("audit", "--run", rows[0]["run_id"], env=env)
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = await finished_signoff("audit", "--run", "run_other", env=env)
    assert code == 0 and out == ""


async def test_audit_filters_by_time_and_user(env: dict[str, str]) -> None:
    assert (await finished_signoff(*RUN, env=env))[0] == 0

    code, out, err = await finished_signoff("audit", "--user", "cli", env=env)
    assert code == 0, err
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["created"]
    code, out, _ = await finished_signoff("audit", "--since", "1h", env=env)
    assert code == 0 and len(out.splitlines()) == 2
    code, out, _ = await finished_signoff("audit", "--since", "2999-01-01", env=env)
    assert code == 0 and out == ""
    code, _, err = await finished_signoff("audit", "--since", "yesterday", env=env)
    assert code == 2 and "neither an ISO date or time" in err
    code, out, err = await finished_signoff(
        "audit", "--user", "alice", env=env
    )  # a name, not an id
    assert code == 0 and out == "" and "names Slack users by id" in err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "return Agent(model=OneToolModel('delete_files', {}), tools=[delete_files], "
            "interrupt_on={'delete_files': 'yes'}, session_store=store)",
            "signoff: agent 'cleanup': interrupt_on['delete_files']: use True, False or a dict",
        ),
        (
            "raise ValueError('no API key')",
            "signoff: agent 'cleanup': build() raised ValueError: no API key\n",
        ),
        (
            "return object()",
            "signoff: agent 'cleanup': build() returned object, not an Agent or a Workflow\n",
        ),
    ],
    ids=["bad interrupt_on", "no API key", "no agent built"],
)
async def test_run_of_an_agent_whose_build_fails_ends_in_one_line_naming_it(
    slack: FakeSlack, env: dict[str, str], tmp_path: Path, body: str, said: str
) -> None:
    """The module loads; the agent's build fails as the run starts: one line naming the
    agent and the cause, not a traceback, and nothing is posted or stored."""
    (tmp_path / "failing_agents.py").write_text(FAILING_BUILD.format(body))
    path = f"{ROOT}:{ROOT / 'tests' / 'bot'}:{tmp_path}"
    code, out, err = await finished_signoff(
        *RUN[:-1], "failing_agents", env={**env, "PYTHONPATH": path}
    )
    assert code == 2 and out == "", err
    assert len(err.splitlines()) == 1 and err.startswith(said), err
    assert slack.called("chat.postMessage") == []
    assert (await finished_signoff("audit", env=env))[1] == ""


async def test_without_agents_signoff_serves_jobs_only(env: dict[str, str]) -> None:
    code, out, err = await finished_signoff(*RUN[:-2], env=env)  # no --agents, no SIGNOFF_AGENTS
    assert code == 2 and out == ""
    assert err == (
        "signoff: no agent named 'cleanup': no agents are loaded (set SIGNOFF_AGENTS, or "
        "--agents, to the module that defines them)\n"
    ), err


async def test_a_token_for_a_channel_named_not_by_id_is_refused_in_one_line(
    env: dict[str, str],
) -> None:
    code, out, err = await finished_signoff(
        "token", "create", "nightly", "--channels", "#ops", env=env
    )
    assert code == 2 and out == ""
    assert err == "signoff: channel '#ops': use a channel id such as C0123ABCD\n", err


async def test_a_token_is_printed_once_and_redis_keeps_only_its_hash(
    env: dict[str, str], redis_url: str, key_prefix: str
) -> None:
    code, out, err = await finished_signoff(
        "token", "create", "nightly", "--channels", "C0OPS", env=env
    )
    assert code == 0, err
    token = out.splitlines()[0].removeprefix("SIGNOFF_TOKEN=")
    assert token.startswith("sgn_") and "stores only the token's hash" in err
    code, listed, _ = await finished_signoff("token", "list", env=env)
    secret = out.splitlines()[1].removeprefix("webhook secret: ")
    assert len(secret) == 64, out
    assert code == 0 and listed.startswith("nightly\tC0OPS\t")
    assert token not in listed and secret not in listed
    raw = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        keys = [k async for k in raw.scan_iter(f"{key_prefix}*")]
        stored = [await raw.hgetall(k) for k in keys if await raw.type(k) == "hash"]
    finally:
        await raw.aclose()
    assert stored and token not in json.dumps(stored)
    assert hashlib.sha256(token.encode()).hexdigest() in json.dumps(stored)
    assert (await finished_signoff("token", "revoke", "nightly", env=env))[:2] == (
        0,
        "revoked nightly\n",
    )
    code, _, err = await finished_signoff("token", "revoke", "nightly", env=env)
    assert (code, err) == (1, "signoff: no client named 'nightly'\n")


async def test_a_clients_callback_url_is_checked_like_a_requests_and_kept(
    env: dict[str, str], redis_url: str, key_prefix: str
) -> None:
    for url, said in (
        ("https://169.254.169.254/hook", "169.254.169.254 is a link-local or metadata address"),
        (
            "http://hooks.example.com/x",
            "use https, or allow hooks.example.com in SIGNOFF_WEBHOOK_ALLOW, both for this "
            "command and for every Signoff process",
        ),
    ):
        code, out, err = await finished_signoff(
            "token", "create", "nightly", "--callback-url", url, env=env
        )
        assert (code, out) == (2, "") and err.startswith(f"signoff: --callback-url: {said}")
    url = "https://hooks.example.com/signoff"
    code, _, err = await finished_signoff(
        "token", "create", "nightly", "--callback-url", url, env=env
    )
    assert code == 0, err
    storage = await connect(redis_url, prefix=key_prefix)
    try:
        client = await storage.api_clients.get("nightly")
    finally:
        await storage.close()
    assert client is not None and client.callback_url == url


@pytest.mark.parametrize("given", ["", " , "])
async def test_a_token_given_no_channel_is_refused_not_made_for_any_channel(
    env: dict[str, str], given: str
) -> None:
    """``--channels "$OPS_CHANNEL"`` with the variable unset must not make a client that
    may post anywhere."""
    code, out, err = await finished_signoff(
        "token", "create", "nightly", "--channels", given, env=env
    )
    assert code == 2 and out == ""
    assert err == (
        "signoff: --channels names no channel: give its ids (C0123ABCD), or leave --channels "
        "out for a client that may post to any channel\n"
    ), err
    code, out, err = await finished_signoff("token", "list", env=env)
    assert code == 0 and "nightly" not in out, out


async def test_token_list_shows_where_a_clients_webhooks_go_not_their_secrets(
    env: dict[str, str],
) -> None:
    hook = "https://hooks.example.com/signoff?token=s3cret#frag"
    made = await finished_signoff("token", "create", "deploys", "--callback-url", hook, env=env)
    assert made[0] == 0, made[2]
    assert (await finished_signoff("token", "create", "nightly", "--channels", "C0OPS", env=env))[
        0
    ] == 0
    code, out, err = await finished_signoff("token", "list", env=env)
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()}
    assert (
        rows["deploys"][1] == "any channel"
        and rows["deploys"][4] == "webhooks to https://hooks.example.com/signoff"
    )
    assert rows["nightly"][1] == "C0OPS" and len(rows["nightly"]) == 4


async def test_token_list_shows_each_clients_requests_pending_against_its_limit(
    env: dict[str, str], redis_url: str, key_prefix: str
) -> None:
    for name in ("nightly", "nightly-backup"):
        assert (await finished_signoff("token", "create", name, env=env))[0] == 0
    storage = await connect(redis_url, prefix=key_prefix)
    try:
        for n in range(3):  # requests spread over the shards, one with two items
            records = [_request("nightly", f"req_{n:032x}", item) for item in range(n % 2 + 1)]
            await storage.interrupts.create_interrupts(records, pending_limit=10)
    finally:
        await storage.close()
    limited = env | {"SIGNOFF_API_PENDING_REQUESTS": "5"}
    code, out, err = await finished_signoff("token", "list", env=limited)
    assert code == 0, err
    rows = {line.split("\t")[0]: line.split("\t") for line in out.splitlines()}
    assert rows["nightly"][3] == "4 of 5 pending", rows
    assert rows["nightly-backup"][3] == "0 of 5 pending", rows


def _request(client: str, run_id: str, item: int) -> InterruptRecord:
    """A pending record (item ``item``) of a job's request by ``client``."""
    call = ToolCall(id=f"ask{item}", name="ask", args={})
    interrupt = Interrupt(
        id=f"ask{item}", name="ask", reason="rotate", tool_call=call, created_at=datetime.now(UTC)
    )
    return InterruptRecord.new(
        interrupt,
        run_id=run_id,
        thread_id=run_id,
        agent="",
        requested_by=client,
        policy=ApproverPolicy(allowed_users=("UALICE",)),
        now=datetime.now(UTC),
        channel="C0OPS",
    )


async def test_without_redis_url_a_token_command_says_whose_redis_it_uses(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    alone = {k: v for k, v in env.items() if k != "REDIS_URL"} | {
        "SIGNOFF_DATA_DIR": str(tmp_path / "data")
    }
    code, out, err = await finished_signoff("token", "list", env=alone)
    assert code == 0 and out == "", err
    assert err.splitlines()[-1] == (
        f"signoff: no REDIS_URL: using the embedded Redis in {tmp_path / 'data'} (set "
        "REDIS_URL to the bot's Redis; the demo prints its own)"
    )


async def test_a_bad_setting_stops_startup_with_one_line(slack: FakeSlack) -> None:
    code, out, err = await finished_signoff("serve", env={"SIGNOFF_WORKERS": "lots"})
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and err.startswith("signoff: SIGNOFF_WORKERS")


@pytest.mark.parametrize("command", ["serve", "socket", "worker", "run"])
async def test_a_missing_bot_token_stops_startup_with_one_line_naming_it(
    env: dict[str, str], command: str
) -> None:
    given = {**env, "SLACK_BOT_TOKEN": "", "SLACK_APP_TOKEN": "xapp-1", "SLACK_SIGNING_SECRET": ""}
    args = RUN if command == "run" else (command,)
    code, out, err = await finished_signoff(*args, env=given)
    assert code == 2 and out == "", err
    assert err.strip().splitlines() == [err.strip()] and err.startswith("signoff: SLACK_BOT_TOKEN")


async def test_a_port_in_use_stops_startup_with_one_line(env: dict[str, str]) -> None:
    taken = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = taken.sockets[0].getsockname()[1]
    try:
        code, out, err = await finished_signoff(
            "worker", "--port", str(port), env={**env, "SIGNOFF_HOST": "127.0.0.1"}
        )
    finally:
        taken.close()
    assert code == 2 and out == "", err
    assert err.startswith(f"signoff: cannot listen on 127.0.0.1:{port} ("), err
    assert "check SIGNOFF_HOST and SIGNOFF_PORT" in err and len(err.splitlines()) == 1, err


@pytest.mark.parametrize(
    "args",
    [("audit", "--since", "1000000d"), ("worker", "--port", "99999"), ("worker", "--port", "x")],
)
async def test_an_out_of_range_option_is_a_usage_error_not_a_traceback(
    env: dict[str, str], args: tuple[str, ...]
) -> None:
    code, out, err = await finished_signoff(*args, env=env)
    assert code == 2 and out == "", err
    assert "Traceback" not in err and f"argument {args[1]}: '{args[2]}'" in err, err


async def test_audit_since_a_date_before_1970_prints_the_whole_trail(env: dict[str, str]) -> None:
    assert (await finished_signoff(*RUN, env=env))[0] == 0

    code, out, err = await finished_signoff("audit", "--since", "1960-01-01T00:00Z", env=env)
    assert code == 0, err
    assert [json.loads(line)["event"] for line in out.splitlines()] == ["created", "posted"]


async def test_run_in_a_channel_named_not_by_id_is_refused_in_one_line(
    slack: FakeSlack, env: dict[str, str]
) -> None:
    args = ("run", "cleanup", "--channel", "#ops", "--input", "tidy", "--agents", "cleanup_agents")
    code, out, err = await finished_signoff(*args, env=env)
    assert code == 2 and out == "", err
    assert err.startswith("signoff: ") and "C0123ABCD" in err and len(err.splitlines()) == 1, err
    assert slack.called("chat.postMessage") == []
    assert (await finished_signoff("audit", env=env))[1] == ""  # nothing was stored


async def test_audit_into_a_reader_that_stopped_reading_ends_without_a_traceback(
    env: dict[str, str],
) -> None:
    assert (await finished_signoff(*RUN, env=env))[0] == 0
    read_end, write_end = os.pipe()
    os.close(read_end)  # `signoff audit | head -1`, once head has its line and has exited
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "import sys; from bot.process.cli import main; raise SystemExit(main(sys.argv[1:]))",
            "audit",
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'tests' / 'bot'}", **env},
            stdout=write_end,
            stderr=asyncio.subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    _, err = await asyncio.wait_for(process.communicate(), 60)
    assert err.decode() == "" and process.returncode == 1, err.decode()


async def test_run_whose_card_slack_refused_says_so_not_just_waiting(
    slack: FakeSlack, env: dict[str, str]
) -> None:
    slack.not_in.add("C0OPS")
    code, out, err = await finished_signoff(*RUN, env=env)
    assert code == 0, err
    waiting = [line for line in out.splitlines() if "waiting for approval" in line]
    assert len(waiting) == 1, out
    assert "card is not in Slack yet (Slack answered not_in_channel" in waiting[0], out
    assert "is the app a member of C0OPS?" in waiting[0], out
    slack.not_in.clear()
    code, out, err = await finished_signoff(*RUN, env=env)
    assert code == 0 and "not in Slack" not in out, out


async def test_a_data_dir_that_cannot_be_made_stops_startup_with_one_line(
    env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REDIS_URL", raising=False)
    taken = tmp_path / "a-file"
    taken.write_text("")
    for data_dir in (taken, taken / "redis"):
        alone = {k: v for k, v in env.items() if k != "REDIS_URL"}
        code, out, err = await finished_signoff(
            "token", "list", env=alone | {"SIGNOFF_DATA_DIR": str(data_dir)}
        )
        assert code == 2 and out == "", err
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"signoff: cannot keep the embedded Redis's data in {data_dir}")
        assert "SIGNOFF_DATA_DIR" in err, err
