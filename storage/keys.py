"""Every Redis key name storage uses, built under one configurable prefix.

The keys of one run share the hash tag ``{run_id}`` (a thread's session shares
``{thread_id}``), so a run's keys land in one Redis Cluster slot. The global indexes
(due times, outbox, per-user and per-channel lists, streams) are one key each, and the
scripts touch them with a run's keys: Redis Cluster is not supported (see ``storage``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import InvalidIdError

_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
_PREFIX = re.compile(r"[A-Za-z0-9_.\-]{1,64}")


def check_id(kind: str, value: object) -> str:
    """``value`` if it is a well-formed id, else InvalidIdError naming what was wrong."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InvalidIdError(f"malformed {kind} id {value!r}: use 1-128 letters, digits or _ . : -")
    return value


def record_id(run_id: str, interrupt_id: str) -> str:
    """The storage id of a run's interrupt: ``<run_id>/<interrupt_id>``.

    Runtime interrupt ids repeat across runs of one workflow, so the run id makes the
    record id unique, and carries the run so a decision needs no lookup round trip.
    """
    return f"{check_id('run', run_id)}/{check_id('interrupt', interrupt_id)}"


def split_record_id(value: object) -> tuple[str, str]:
    """``(run_id, interrupt_id)`` of a record id; InvalidIdError when malformed."""
    if not isinstance(value, str) or value.count("/") != 1:
        raise InvalidIdError(f"malformed interrupt record id {value!r}: expected 'run/interrupt'")
    run_id, interrupt_id = value.split("/")
    return check_id("run", run_id), check_id("interrupt", interrupt_id)


@dataclass(frozen=True, kw_only=True)
class Keys:
    """Builds key names under ``prefix`` (default ``signoff``)."""

    prefix: str = "signoff"

    def __post_init__(self) -> None:
        if not _PREFIX.fullmatch(self.prefix):
            raise ValueError(f"key prefix {self.prefix!r}: use 1-64 letters, digits or _ . -")

    def record(self, rid: str) -> str:
        run_id, interrupt_id = split_record_id(rid)
        return f"{self.prefix}:run:{{{run_id}}}:int:{interrupt_id}"

    def run_pending(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:pending"

    def run_decided(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:decided"

    def run_round(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:round"

    def run_lease(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:lease"

    def run_applied(self, run_id: str) -> str:
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:applied"

    def run_ended(self, run_id: str) -> str:
        """String: set once the run's end was announced, so a retried resume stays quiet."""
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:ended"

    def run_attempts(self, run_id: str) -> str:
        """Hash: resume job id -> its failed attempts (expires like the applied markers)."""
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:attempts"

    def request(self, run_id: str) -> str:
        """String: what an external approval request asked for (its ``RequestMeta``)."""
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:request"

    def clicks_waiting(self, rid: str) -> str:
        """String: how many acknowledged clicks on record ``rid`` wait in the click stream,
        so the expiry sweep leaves it to them (a click counts as of when it was made)."""
        return self.record(rid) + ":clicks"

    def click_decided(self, run_id: str, entry_id: str) -> str:
        """String: set when a click stream entry was decided, so its replay changes nothing."""
        entry = check_id("click", entry_id)
        return f"{self.prefix}:run:{{{check_id('run', run_id)}}}:click:{entry}"

    def delivery(self, event_id: str) -> str:
        """String: set when an Events API event was first delivered, so retries are skipped."""
        return f"{self.prefix}:event:{check_id('event', event_id)}"

    def session(self, thread_id: str) -> str:
        return f"{self.prefix}:thread:{{{check_id('thread', thread_id)}}}:session"

    def thread_lease(self, thread_id: str) -> str:
        """String: the token of whoever holds the thread alone (``RedisSessionStore.lease``)."""
        return f"{self.prefix}:thread:{{{check_id('thread', thread_id)}}}:lease"

    @property
    def due(self) -> str:
        """Sorted set: record id scored by its expiry time (ms)."""
        return f"{self.prefix}:due"

    @property
    def reminders(self) -> str:
        """Sorted set: record id scored by its next reminder time (ms)."""
        return f"{self.prefix}:reminders"

    @property
    def outbox(self) -> str:
        """Sorted set: records not yet posted, scored by when they may next be tried."""
        return f"{self.prefix}:outbox"

    @property
    def group_checks(self) -> str:
        """Sorted set: records with user groups, scored by when their members are checked."""
        return f"{self.prefix}:group-checks"

    @property
    def by_user(self) -> str:
        """Lexicographic set: ``user \\0 created_ms \\0 record_id`` for pending records."""
        return f"{self.prefix}:pending:user"

    @property
    def by_channel(self) -> str:
        """Lexicographic set: ``channel \\0 created_ms \\0 record_id`` for pending records."""
        return f"{self.prefix}:pending:channel"

    @property
    def api_clients(self) -> str:
        """Hash: API client name -> its stored ``ApiClient`` (token hash, channels, secret)."""
        return f"{self.prefix}:api:clients"

    @property
    def away(self) -> str:
        """Hash: user id -> when they are back and who decides for them meanwhile."""
        return f"{self.prefix}:away"

    @property
    def home_viewers(self) -> str:
        """Sorted set: user id scored by when they last opened the app's Home tab."""
        return f"{self.prefix}:home:viewers"

    @property
    def trust_grants(self) -> str:
        """Hash: trust grant id -> its stored ``TrustGrant`` (agent, tool, channel, until)."""
        return f"{self.prefix}:trust"

    @property
    def api_tokens(self) -> str:
        """Hash: SHA-256 of an API token -> the name of the client it belongs to."""
        return f"{self.prefix}:api:tokens"

    @property
    def webhooks(self) -> str:
        """Sorted set: webhook delivery ids scored by when they may next be tried."""
        return f"{self.prefix}:webhooks"

    def webhook(self, delivery_id: str) -> str:
        """String: one webhook delivery (``WebhookDelivery`` JSON) until it is delivered."""
        return f"{self.prefix}:webhook:{check_id('delivery', delivery_id)}"

    @property
    def resume_stream(self) -> str:
        return f"{self.prefix}:resume"

    @property
    def resume_dead_letters(self) -> str:
        """Stream: resume jobs given up after too many failed attempts, for an operator."""
        return f"{self.prefix}:resume:dead"

    @property
    def click_stream(self) -> str:
        """Stream: decision clicks acknowledged to Slack, waiting for a decider."""
        return f"{self.prefix}:clicks"

    @property
    def audit_stream(self) -> str:
        return f"{self.prefix}:audit"

    @property
    def request_events(self) -> str:
        """Stream: the audit entries of external requests only (the scripts derive it as
        the audit stream's name plus ``:requests``)."""
        return f"{self.audit_stream}:requests"
