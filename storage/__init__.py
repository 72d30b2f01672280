"""Signoff's storage: Redis as the source of truth for interrupts, decisions and runs.

Entry point::

    storage = await connect(os.environ.get("REDIS_URL"), prefix="signoff")
    # url None: starts an embedded server (data under ~/.local/share/signoff/redis)
    async with storage: ...

``Storage`` holds:

- ``sessions: RedisSessionStore`` - the runtime's ``SessionStore`` (load, save with
  ``expected_version``, delete).
- ``interrupts: InterruptStore`` - every change of a record, each one atomic step:
  ``create_interrupt(record, *, post_lease)``, ``create_interrupts(records, *,
  post_lease, pending_limit)`` (one run's batch; the caller posts them, the outbox hands
  them out only after ``post_lease``; an external request past its client's
  ``pending_limit`` is ``PendingLimitError``), ``claim_outbox(now, *, limit, lease)``
  (stored, not yet posted: post, then)
  ``mark_posted(id, channel, ts, *, thread_ts, now)``,
  ``decide(id, user_id, decision, *, args_digest, now, channel, message_ts, click_id)
  -> DecideOutcome`` (``click_id``: a click stream entry, decided at most once; ``untold``:
  its refusal, queued until its decider told it),
  ``expire_due(now, *, limit) -> list[ExpiryResult | LostRecord]``,
  ``scan_gone(cursors, *, count) -> GoneScan`` (pending records Redis lost, found before
  their time is up) and ``claim_gone(id, now) -> LostRecord | None`` (one found gone,
  handed to the first caller as the expiry sweep hands it),
  ``due_reminders(now, *, limit) -> list[ReminderDue]``,
  ``cancel_run(run_id, *, reason, now, by) -> Cancelled``,
  ``claim_group_checks(now, *, limit, every)`` (pending records with user groups, due for
  a member check), ``set_group_members(record, members, *, now, asked_by)``,
  ``redraw_later(id, *, at)``, ``claim_redraws(now, *, limit, lease)`` and
  ``redrawn(id, *, leased_until)`` (cards Slack did not redraw, tried again).
- ``queries: InterruptQueries`` - ``get(id)``, ``pending_for_user(user_id, *, limit,
  cursor) -> Page``, ``pending_for_channel(channel, ...) -> Page``,
  ``pending_for_run(run_id)``, ``many(ids)``, ``batch_card(record)`` and
  ``led_by(lead_id) -> Batch`` (a batch card's items, a damaged one told apart).
- ``reminders: ReminderStore`` - ``defer(id, number, *, until)``: hand a reminder just
  taken out again later (when none of its approvers is at work).
- ``resume: ResumeQueue`` - ``claim``, ``reclaim``, ``begin``, ``complete``, ``release``,
  ``ack``, ``fail`` (a failed resume: retried, or after ``max_attempts`` moved to the
  dead-letter stream), ``dead_letters()`` (see ``storage.resume`` for the worker loop).
- ``clicks: ClickStream`` - ``append`` (a decision click, before Slack gets its ack),
  ``claim``, ``reclaim``, ``done(entries, *, told)``: the deciders' consumer group (see
  ``storage.clicks``).
- ``refusals: RefusalQueue`` - ``claim(now)``, ``done(leased)``: click refusals stored by
  ``decide(..., untold=)`` whose decider died before telling them (see ``storage.refusals``).
- ``audit: AuditLog`` - ``append(AuditEntry)``, ``read(*, after, count)``.
- ``deliveries: Deliveries`` - ``first(event_id) -> bool``: False for a retried Events
  API delivery already handled (ids remembered for an hour).
- ``requests: RequestStore`` - ``keep(run_id, meta, *, ttl)``, ``meta(run_id)``: what an
  external request asked beyond its record (a request is the one interrupt of a run
  ``req_…``, see ``storage.requests``).
- ``api_clients: ApiClients`` - ``create``, ``revoke``, ``get``, ``authenticate(token)``,
  ``all()``: the named clients of the requests API (only token hashes are stored).
- ``webhooks: WebhookOutbox`` - the request events' consumer group and the deliveries
  waiting for their receivers (``add``, ``claim_due``, ``retry``, ``done``).
- ``trust: TrustGrants`` - ``grant``, ``covering``, ``active``, ``revoke``: approvers'
  "trust this tool in this channel for N minutes" (see ``storage.trust_grants``).
- ``home: HomeViewers`` - ``opened(user, now)``, ``recent(users, now)``: whose Home tab
  is worth redrawing after a decision; ``place(user)``, ``drawn(user, now, place=,
  seen_in=)``: on which pages, and whose Home listed a channel's open requests.
- ``notes: NoteQueue`` - ``later(note, *, at)``, ``claim(now)``, ``done(leased)``: thread
  notes Slack did not take, tried again; ``once(name, note, *, now, lease)``: a note only
  the first caller naming it posts, queued as it is claimed (see ``storage.notes``).

A record's id (``InterruptRecord.id``) is ``"<run_id>/<interrupt id>"``: put it in the
button value; ``decide`` needs nothing else from the click but the user id (and, to check
the click's origin, its channel and message ts). Build records with
``InterruptRecord.new(interrupt, run_id=..., thread_id=..., agent=..., requested_by=...,
policy=ApproverPolicy(...), now=...)``; ``record.response()`` is the ``InterruptResponse``
a resumed run receives. Every error is a ``StorageError``.

Deployment: one Redis (or Valkey) primary, >= 6.2, reached directly or through Sentinel
(``redis+sentinel://``); or Redis Cluster (``redis+cluster://``, ``rediss+cluster://``
over TLS). On a cluster the keys take the sharded layout of ``storage.keys``: every
script still touches one hash slot, the queries and sweeps read every shard, and the
stream consumers take a shard each (``claim(..., shard=n)``).
"""

from .approvers import ApproverPolicy
from .audit import AuditEntry, AuditLog
from .clicks import ClickEntry, ClickStream
from .connection import Storage, connect, default_data_dir
from .deliveries import Deliveries
from .embedded import EmbeddedRedis, find_server_binary
from .errors import (
    CorruptRecordError,
    DuplicateInterruptError,
    EmbeddedServerError,
    InvalidIdError,
    StorageAuthError,
    StorageError,
    StorageResponseError,
    StorageUnavailableError,
)
from .ids import record_id, split_record_id
from .interrupts import InterruptStore
from .keys import Keys
from .outcomes import (
    DecideOutcome,
    ExpiryResult,
    GoneScan,
    LostRecord,
    Page,
    RefusalReason,
    ReminderDue,
)
from .queries import InterruptQueries
from .records import InterruptRecord, InterruptState
from .reminders import ReminderStore
from .resume import BeginResult, Failure, ResumeJob, ResumeQueue
from .retention import Retention
from .sessions import RedisSessionStore
from .votes import Vote

__all__ = [
    "ApproverPolicy",
    "AuditEntry",
    "AuditLog",
    "BeginResult",
    "ClickEntry",
    "ClickStream",
    "CorruptRecordError",
    "DecideOutcome",
    "Deliveries",
    "DuplicateInterruptError",
    "EmbeddedRedis",
    "EmbeddedServerError",
    "ExpiryResult",
    "Failure",
    "GoneScan",
    "InterruptQueries",
    "InterruptRecord",
    "InterruptState",
    "InterruptStore",
    "InvalidIdError",
    "Keys",
    "LostRecord",
    "Page",
    "RedisSessionStore",
    "RefusalReason",
    "ReminderDue",
    "ReminderStore",
    "ResumeJob",
    "ResumeQueue",
    "Retention",
    "Storage",
    "StorageAuthError",
    "StorageError",
    "StorageResponseError",
    "StorageUnavailableError",
    "Vote",
    "connect",
    "default_data_dir",
    "find_server_binary",
    "record_id",
    "split_record_id",
]
