"""Fast unit tests: key names, ids, policy and record validation, and Lua on fakeredis."""

from __future__ import annotations

import json
from datetime import timedelta

import fakeredis
import pytest
from pydantic import ValidationError
from redis.crc import key_slot
from storage_helpers import NOW, make_record

from agent_runtime.interrupts import Decision
from agent_runtime.messages import args_digest
from bot.errors import ConfigError
from bot.process.settings import Settings
from storage import (
    ApproverPolicy,
    CorruptRecordError,
    InterruptRecord,
    InvalidIdError,
    Keys,
    record_id,
    split_record_id,
)
from storage.client import RedisClient
from storage.cluster import ClusterTarget, parse_cluster_url
from storage.interrupts import InterruptStore
from storage.queries import InterruptQueries
from storage.retention import Retention


def test_a_runs_keys_share_its_hash_tag_under_the_prefix() -> None:
    keys = Keys(prefix="acme")
    rid = record_id("run_7", "int_x")
    assert keys.record(rid) == "acme:run:{run_7}:int:int_x"
    assert keys.run_pending("run_7") == "acme:run:{run_7}:pending"
    assert keys.session("th_1") == "acme:thread:{th_1}:session"
    assert split_record_id(rid) == ("run_7", "int_x")


def test_the_cluster_layout_puts_a_run_and_its_shards_indexes_in_one_slot() -> None:
    keys = Keys(prefix="acme", shards=8)
    slots = set()
    for n in range(64):
        run = f"run_{n}"
        shard = keys.shard_of(run)
        together = [keys.record(record_id(run, "i")), keys.run_lease(run), keys.due(shard)]
        together += [keys.resume_stream(shard), keys.request_events(shard)]
        assert len({key_slot(key.encode()) for key in together}) == 1
        slots.add(key_slot(keys.due(shard).encode()))
    # Eight shards, each in its own eighth of the slot space: spread over any even cluster.
    assert sorted(slot * 8 // 16384 for slot in slots) == list(range(8))
    assert key_slot(keys.api_clients.encode()) == key_slot(keys.api_tokens.encode())
    assert key_slot(keys.webhooks.encode()) == key_slot(keys.webhook("d1").encode())


def test_the_single_redis_layout_keeps_the_key_names_existing_data_has() -> None:
    keys = Keys(prefix="acme")
    assert list(keys.all_shards) == [0] and keys.shard_of("run_7") == 0
    assert (keys.due(0), keys.resume_stream(0), keys.audit_stream(0)) == (
        "acme:due",
        "acme:resume",
        "acme:audit",
    )
    assert (keys.api_clients, keys.webhook("d1")) == ("acme:api:clients", "acme:webhook:d1")


@pytest.mark.parametrize("bad", ["", "a/b/c", "run{1}/x", "run 1/x", "r/" + "x" * 200, None])
def test_malformed_record_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidIdError):
        split_record_id(bad)


def test_a_workflow_nodes_thread_is_a_session_key_and_a_lease_key_in_its_threads_slot() -> None:
    keys = Keys(prefix="acme")
    node = "thread_1/cleanup"
    assert keys.session(node) == "acme:thread:{thread_1/cleanup}:session"
    assert key_slot(keys.thread_lease(node).encode()) == key_slot(keys.session(node).encode())
    for bad in ("thread_1//x", "thread_1/{x}", "a/" * 300 + "b"):
        with pytest.raises(InvalidIdError):
            keys.session(bad)
        with pytest.raises(InvalidIdError):
            keys.thread_lease(bad)


def test_policy_fails_closed_and_validates_escalation() -> None:
    assert ApproverPolicy().allowed_users == () and not ApproverPolicy().open_to_channel
    with pytest.raises(ValidationError, match="escalate"):
        ApproverPolicy(expires_in=timedelta(hours=1), on_expiry="escalate")
    with pytest.raises(ValidationError):
        ApproverPolicy(min_approvals=0)
    policy = ApproverPolicy(reminders=(timedelta(hours=2), timedelta(hours=1)))
    assert policy.reminders == (timedelta(hours=1), timedelta(hours=2))


def test_record_round_trips_through_its_hash() -> None:
    record = make_record(reminders=(timedelta(minutes=30),), expires_in=timedelta(hours=1))
    again = InterruptRecord.from_hash("k", record.to_hash())
    assert again == record
    assert record.args_digest == args_digest({"path": "/tmp/old"})


def test_a_policy_keeps_its_working_hours_and_older_records_read_as_nine_to_six() -> None:
    record = make_record(work_start_hour=7, work_end_hour=10)
    again = InterruptRecord.from_hash("k", record.to_hash())
    assert (again.policy.work_start_hour, again.policy.work_end_hour) == (7, 10)
    fields = make_record().to_hash()
    stored = json.loads(fields["policy"])
    del stored["work_start_hour"], stored["work_end_hour"]
    fields["policy"] = json.dumps(stored)
    old = InterruptRecord.from_hash("k", fields)
    assert (old.policy.work_start_hour, old.policy.work_end_hour) == (9, 18)
    with pytest.raises(ValidationError, match="before"):
        ApproverPolicy(work_start_hour=18, work_end_hour=9)


def test_a_hash_missing_fields_is_a_corrupt_record_naming_its_key() -> None:
    fields = make_record().to_hash()
    del fields["policy"]
    with pytest.raises(CorruptRecordError, match="signoff:run:"):
        InterruptRecord.from_hash("signoff:run:{run_1}:int:int_call_1", fields)


async def test_decide_script_runs_on_fakeredis() -> None:
    client = RedisClient("redis://fake")
    client.raw = fakeredis.FakeAsyncRedis(decode_responses=True)
    keys = Keys(prefix="unit")
    store = InterruptStore(client, keys, Retention(), InterruptQueries(client, keys))
    record = await store.create_interrupt(make_record())
    digest = record.args_digest
    out = await store.decide(record.id, "UALICE", Decision.approve(), args_digest=digest, now=NOW)
    assert out.status == "recorded" and out.resume_job_id
    again = await store.decide(record.id, "UBOB", Decision.approve(), args_digest=digest, now=NOW)
    assert (again.reason, again.decided_by) == ("already_decided", "UALICE")


def test_a_cluster_url_names_its_startup_nodes_credentials_and_tls() -> None:
    plain = parse_cluster_url("redis+cluster://:s%40cret@10.0.0.1:7000,cache.internal/")
    assert plain == ClusterTarget(
        nodes=(("10.0.0.1", 7000), ("cache.internal", 6379)), password="s@cret"
    )
    tls = parse_cluster_url("rediss+cluster://app:pw@cfg.example:6379/?ssl_ca_certs=/etc/ca.pem")
    assert tls.tls and (tls.username, tls.password, tls.ca_certs) == ("app", "pw", "/etc/ca.pem")
    bracketed = parse_cluster_url("redis+cluster://[2001:db8::1]:7000,[::1]/")
    assert bracketed.nodes == (("2001:db8::1", 7000), ("::1", 6379))


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://h:port/", "cluster node port 'port' is not a number"),
        ("redis+cluster:///", "name at least one cluster node"),
        ("redis+cluster://h:99999/", "cluster node port 99999 is not one: use 1-65535"),
        ("redis+cluster://h:0/", "cluster node port 0 is not one"),
        ("redis+cluster://2001:db8::1:7000/", r"write an IPv6 address as \[::1\]"),
        ("redis+cluster://[::1]x/", r"write an IPv6 address as \[::1\]"),
        ("redis+cluster://h:6379/0", "a cluster has one database"),
        ("redis+cluster://h/?ssl_ca_certs=/ca.pem", "ssl_ca_certs needs TLS"),
        ("rediss+cluster://h/?db=2", "unknown options"),
    ],
)
def test_a_malformed_cluster_url_stops_startup_saying_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_cluster_url(url)
    with pytest.raises(ConfigError, match=f"^REDIS_URL: .*{says}"):
        Settings.from_env({"REDIS_URL": url})
