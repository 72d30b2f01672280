"""Every Redis key name storage uses, built under one configurable prefix.

Two layouts, one code path. On a single Redis (or Sentinel) the indexes (due times,
outbox, per-user and per-channel lists, streams) are one key each, and a run's keys
share the hash tag ``{run_id}``. On Redis Cluster every atomic step must stay in one
hash slot, so the indexes are split into ``shards``, each under a hash tag of its own,
and a run's keys carry the tag of the shard its id hashes to: one script updates a run
and its index entries together. A thread's session keys share ``{thread_id}`` in both.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from functools import cache

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from .ids import check_id, check_thread_id, split_record_id

_PREFIX = re.compile(r"[A-Za-z0-9_.\-]{1,64}")

CLUSTER_SHARDS = 8
"""How many shards the Redis Cluster layout splits the indexes into: each holds its
own streams and index keys, and every process reads every shard."""


@cache
def shard_tag(shard: int, shards: int) -> str:
    """The hash tag of shard ``shard`` of ``shards``: the first ``s<shard>.<n>`` whose
    slot falls in the shard's equal part of the slot space, so shards spread evenly over
    any cluster that spreads its slots evenly over its primaries."""
    width = REDIS_CLUSTER_HASH_SLOTS / shards
    low, high = shard * width, (shard + 1) * width
    n = 0
    while not low <= key_slot(f"s{shard}.{n}".encode()) < high:
        n += 1
    return f"s{shard}.{n}"


@dataclass(frozen=True, kw_only=True)
class Keys:
    """Builds key names under ``prefix`` (default ``signoff``); ``shards`` None is the
    single-slot layout, a number the Redis Cluster layout with that many shards."""

    prefix: str = "signoff"
    shards: int | None = None

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(f"key prefix {self.prefix!r}: use 1-64 letters, digits or _ . -")
        if self.shards is not None and not 1 <= self.shards <= 256:
            raise ValueError(f"shards {self.shards!r}: use 1-256")

    @property
    def all_shards(self) -> range:
        """Every shard's number: the shards a query or a consumer goes over."""
        return range(self.shards or 1)

    def shard_of(self, run_id: str) -> int:
        """The shard run ``run_id`` belongs to (always 0 in the single-slot layout)."""
        check_id("run", run_id)
        return zlib.crc32(run_id.encode()) % self.shards if self.shards else 0

    def shard_of_record(self, rid: str) -> int:
        """The shard of a record id's run; InvalidIdError when the id is malformed."""
        return self.shard_of(split_record_id(rid)[0])

    def entry_shard(self, shard: int) -> int | None:
        """The shard a stream entry of ``shard`` is marked with: None in the single-slot
        layout, where its stream id alone names it."""
        return None if self.shards is None else shard

    def _run(self, run_id: str) -> str:
        if self.shards is None:
            return f"{self.prefix}:run:{{{check_id('run', run_id)}}}"
        return f"{self._shard(self.shard_of(run_id))}:run:{run_id}"

    def _shard(self, shard: int) -> str:
        if self.shards is None:
            return self.prefix
        return f"{self.prefix}:{{{shard_tag(shard, self.shards)}}}"

    @property
    def _global(self) -> str:
        """Where the keys of no run live; on a cluster they share one slot, so a step
        over two of them (a client and its token) stays atomic."""
        return self.prefix if self.shards is None else f"{self.prefix}:{{global}}"

    def record(self, rid: str) -> str:
        run_id, interrupt_id = split_record_id(rid)
        return f"{self._run(run_id)}:int:{interrupt_id}"

    def lost_by(self, rid: str) -> str:
        """String, kept a minute: the token of the expiry sweep that found record ``rid``
        gone while pending, so that sweep sent again (its reply lost) reports it again."""
        return f"{self.record(rid)}:lost"

    def app_round(self, rid: str) -> str:
        """Set: the records of the round the app closed by deciding ``rid`` (the run's
        decided set, set aside for it), until the app lets go of the round."""
        return f"{self.record(rid)}:round"

    def run_creation(self, run_id: str) -> str:
        """String, kept a minute: the token of the call that last stored the run's
        interrupts, so that call sent again (its reply lost) is answered as it was."""
        return f"{self._run(run_id)}:created_by"

    def run_pending(self, run_id: str) -> str:
        return f"{self._run(run_id)}:pending"

    def run_place(self, run_id: str) -> str:
        """Hash: an agent's run (its agent and thread), or when a job's request was asked,
        and where it talks in Slack, kept as long as its pending set, so a run whose record
        Redis lost can still be ended (a job's request also notes each record found lost)."""
        return f"{self._run(run_id)}:place"

    def run_decided(self, run_id: str) -> str:
        return f"{self._run(run_id)}:decided"

    def run_granting(self, run_id: str) -> str:
        """Set: the run's records approved with "Approve and trust" whose grant is not
        stored yet; its resume job waits for them. The scripts derive it from
        ``run_decided``'s name, ``decided`` swapped for ``granting``: the same slot."""
        return f"{self._run(run_id)}:granting"

    def run_round(self, run_id: str) -> str:
        return f"{self._run(run_id)}:round"

    def run_lease(self, run_id: str) -> str:
        return f"{self._run(run_id)}:lease"

    def run_applied(self, run_id: str) -> str:
        return f"{self._run(run_id)}:applied"

    def run_audited(self, run_id: str) -> str:
        """Hash: the run's tool calls whose outcome is in the audit trail (``append_once``)."""
        return f"{self._run(run_id)}:audited"

    def run_ended(self, run_id: str) -> str:
        """String: set once the run's end was announced, so a retried resume stays quiet."""
        return f"{self._run(run_id)}:ended"

    def run_job(self, run_id: str) -> str:
        """Hash: when a request's job started its approved command, and the outcome it
        reported (``JobRuns``)."""
        return f"{self._run(run_id)}:job"

    def run_attempts(self, run_id: str) -> str:
        """Hash: resume job id -> its failed attempts (expires like the applied markers)."""
        return f"{self._run(run_id)}:attempts"

    def request(self, run_id: str) -> str:
        """String: what an external approval request asked for (its ``RequestMeta``)."""
        return f"{self._run(run_id)}:request"

    def clicks_waiting(self, rid: str) -> str:
        """String: how many acknowledged clicks on record ``rid`` wait in the click stream,
        so the expiry sweep leaves it to them (a click counts as of when it was made)."""
        return self.record(rid) + ":clicks"

    def click_decided(self, run_id: str, entry_id: str) -> str:
        """String: set when a click stream entry was decided, so its replay changes nothing."""
        return f"{self._run(run_id)}:click:{check_id('click', entry_id)}"

    def delivery(self, event_id: str) -> str:
        """String: set when an Events API event was first delivered, so retries are skipped."""
        return f"{self.prefix}:event:{check_id('event', event_id)}"

    def signed_request(self, digest: str) -> str:
        """String: set when a signed Slack request (by its signature's digest) was received,
        so the same request sent again is refused."""
        return f"{self.prefix}:signed:{check_id('signature digest', digest)}"

    def envelope(self, envelope_id: str) -> str:
        """String: set when a Socket Mode envelope was received, so the same envelope
        received again (by this process or another) is not acted on."""
        return f"{self.prefix}:envelope:{check_id('envelope', envelope_id)}"

    def session(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{{{check_thread_id(thread_id)}}}:session"

    def app_resume(self, thread_id: str) -> str:
        """String: the digest of the resume an AG-UI app last sent for the thread."""
        return f"{self.prefix}:thread:{{{check_thread_id(thread_id)}}}:app_resume"

    def app_run(self, thread_id: str) -> str:
        """String: the token of the AG-UI request running a round on the thread (``AppRuns``)."""
        return f"{self.prefix}:thread:{{{check_thread_id(thread_id)}}}:app_run"

    def thread_lease(self, thread_id: str) -> str:
        """String: the token of whoever holds the thread alone (``RedisSessionStore.lease``)."""
        return f"{self.prefix}:thread:{{{check_thread_id(thread_id)}}}:lease"

    def due(self, shard: int) -> str:
        """Sorted set: record id scored by its expiry time (ms)."""
        return f"{self._shard(shard)}:due"

    def trust_revoked(self, shard: int) -> str:
        """Sorted set: trust grant ids revoked, scored by when each would have ended (ms),
        one per shard, so the step deciding a card under a grant checks it atomically."""
        return f"{self._shard(shard)}:trust:revoked"

    def reminders(self, shard: int) -> str:
        """Sorted set: record id scored by its next reminder time (ms)."""
        return f"{self._shard(shard)}:reminders"

    def outbox(self, shard: int) -> str:
        """Sorted set: records not yet posted, scored by when they may next be tried."""
        return f"{self._shard(shard)}:outbox"

    def refusals(self, shard: int) -> str:
        """Sorted set: refusals a click decider stored and has not told yet (JSON), scored
        by when another process may tell them (the end of the decider's lease, ms)."""
        return f"{self._shard(shard)}:refusals"

    def refusal_reasons(self, shard: int) -> str:
        """Hash: each of ``refusals``'s entries and the reason its click was refused for."""
        return f"{self._shard(shard)}:refusals:why"

    def redraws(self, shard: int) -> str:
        """Sorted set: records whose cards Slack did not redraw, scored by the next try."""
        return f"{self._shard(shard)}:redraws"

    def app_rounds(self, shard: int) -> str:
        """Sorted set: the record whose decision in the app closed its run's round (the
        app runs that round), scored by when the resume worker takes it over unless the
        app renews it (ms)."""
        return f"{self._shard(shard)}:app_rounds"

    def notes(self, shard: int) -> str:
        """Sorted set: thread notes Slack did not take (JSON), scored by the next try."""
        return f"{self._shard(shard)}:notes"

    def note_once(self, shard: int, name: str) -> str:
        """String: set by the one caller that queues the note ``name`` (a request's decision,
        a batch's), beside the notes of ``shard`` so both change in one step."""
        return f"{self._shard(shard)}:note-once:{name}"

    def group_checks(self, shard: int) -> str:
        """Sorted set: records with user groups, scored by when their members are checked."""
        return f"{self._shard(shard)}:group-checks"

    def by_user(self, shard: int) -> str:
        """Lexicographic set: ``user \\0 created_ms \\0 record_id`` for pending records."""
        return f"{self._shard(shard)}:pending:user"

    def by_channel(self, shard: int) -> str:
        """Lexicographic set: ``channel \\0 created_ms \\0 record_id`` for pending records."""
        return f"{self._shard(shard)}:pending:channel"

    def by_open_channel(self, shard: int) -> str:
        """Lexicographic set: ``by_channel``'s members for the records anyone in the channel
        may decide. The scripts derive it from ``by_channel``'s name: the same slot."""
        return f"{self._shard(shard)}:pending:open"

    def by_client(self, shard: int) -> str:
        """Lexicographic set: ``client \\0 record_id`` for the pending records of external
        requests, counted against their client's cap. The scripts derive it from
        ``by_channel``'s name, ``channel`` swapped for ``client``: the same slot."""
        return f"{self._shard(shard)}:pending:client"

    def resume_stream(self, shard: int) -> str:
        return f"{self._shard(shard)}:resume"

    def resume_dead_letters(self, shard: int) -> str:
        """Stream: resume jobs given up after too many failed attempts, for an operator."""
        return f"{self._shard(shard)}:resume:dead"

    def click_stream(self, shard: int) -> str:
        """Stream: decision clicks acknowledged to Slack, waiting for a decider."""
        return f"{self._shard(shard)}:clicks"

    def audit_stream(self, shard: int) -> str:
        return f"{self._shard(shard)}:audit"

    def audit_append(self, shard: int, token: str) -> str:
        """String, kept a minute: the stream id of the entry one ``AuditLog.append`` call
        added, so the call sent again (its reply lost) does not add it twice."""
        return f"{self.audit_stream(shard)}:appended:{check_id('token', token)}"

    @staticmethod
    def taken(key: str, token: str) -> str:
        """String, kept a minute: the value one ``take_field`` call removed from hash
        ``key`` (in its slot), so the call sent again (its reply lost) still gets it."""
        return f"{key}:taken:{check_id('token', token)}"

    def request_events(self, shard: int) -> str:
        """Stream: the audit entries of external requests only (the scripts derive it as
        the audit stream's name plus ``:requests``)."""
        return f"{self.audit_stream(shard)}:requests"

    @property
    def api_clients(self) -> str:
        """Hash: API client name -> its stored ``ApiClient`` (token hash, channels, secret)."""
        return f"{self._global}:api:clients"

    @property
    def api_tokens(self) -> str:
        """Hash: SHA-256 of an API token -> the name of the client it belongs to."""
        return f"{self._global}:api:tokens"

    @property
    def away(self) -> str:
        """Hash: user id -> when they are back and who decides for them meanwhile."""
        return f"{self._global}:away"

    @property
    def open_index_built(self) -> str:
        """String: set once the requests open to a channel stored before ``by_open_channel``
        existed were added to it."""
        return f"{self._global}:pending:open:built"

    @property
    def home_viewers(self) -> str:
        """Sorted set: user id scored by when they last opened the app's Home tab."""
        return f"{self._global}:home:viewers"

    @property
    def home_places(self) -> str:
        """Hash: user id -> where the lists of their Home tab start (the bot's text), so a
        redraw shows the pages they were on."""
        return f"{self._global}:home:places"

    def home_seen_in(self, channel: str) -> str:
        """Sorted set: user id scored by when their Home last listed a request open to
        ``channel``, so any process redraws it after a decision on one."""
        return f"{self._global}:home:channel:{channel}"

    @property
    def trust_grants(self) -> str:
        """Hash: trust grant id -> its stored ``TrustGrant`` (agent, tool, channel, until)."""
        return f"{self._global}:trust"

    def trust_granted(self, record_id: str) -> str:
        """String, in ``trust_grants``'s slot: the id of the grant the request ``record_id``
        made, so a decision followed up again (a click replayed) keeps no second grant."""
        return f"{self.trust_grants}:for:{record_id}"

    @property
    def webhooks(self) -> str:
        """Sorted set: webhook delivery ids scored by when they may next be tried."""
        return f"{self._global}:webhooks"

    def webhook(self, delivery_id: str) -> str:
        """String: one webhook delivery (``WebhookDelivery`` JSON) until it is delivered,
        then ``finished`` until it expires (a day after it was stored)."""
        return f"{self._global}:webhook:{check_id('delivery', delivery_id)}"
