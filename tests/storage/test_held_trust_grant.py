"""An "Approve and trust" held in its undo window: when the window ends the decision is
final, but its run resumes only once its trust grant is stored (``grant_stored``), so the
resumed run's next call meets the grant. A sweeper that dies (or Redis that fails) before
storing it leaves the decision to the next sweep, never a run waiting for good."""

from __future__ import annotations

from storage_helpers import DIGEST, later, make_record
from test_held_decisions import WINDOW, _jobs

from agent_runtime.interrupts import Decision, Remember
from storage import Storage
from storage.sweeps import GRANT_LEASE

TRUST = Decision.approve(remember=Remember(scope="minutes", minutes=60))


async def _trust_held(storage: Storage) -> str:
    """Alice's "Approve and trust" of a new request, held in its undo window; its id."""
    record = await storage.interrupts.create_interrupt(make_record(undo_window=WINDOW))
    outcome = await storage.interrupts.decide(
        record.id, "UALICE", TRUST, args_digest=DIGEST, now=later(seconds=1), hold_for_grant=True
    )
    assert outcome.status == "held"
    return record.id


async def test_the_run_resumes_only_once_the_grant_of_a_held_trust_is_stored(
    storage: Storage,
) -> None:
    rid = await _trust_held(storage)
    [released] = await storage.interrupts.expire_due(later(seconds=61))
    assert (released.outcome, released.record.state) == ("released", "approved")
    assert released.resume_job_id is None and await _jobs(storage) == 0

    job = await storage.interrupts.grant_stored(rid, now=later(seconds=62))
    assert job is not None and await _jobs(storage) == 1
    assert await storage.interrupts.grant_stored(rid, now=later(seconds=63)) is None
    after_lease = later(seconds=62) + GRANT_LEASE * 2
    assert await storage.interrupts.expire_due(after_lease) == []  # nothing left to hand out
    assert await _jobs(storage) == 1


async def test_a_sweeper_that_dies_before_storing_the_grant_leaves_it_to_the_next_sweep(
    storage: Storage,
) -> None:
    """The sweep made the decision final, then nothing followed: within ``GRANT_LEASE``
    no other sweep takes it, after it one does, and its run resumes once, then."""
    rid = await _trust_held(storage)
    [released] = await storage.interrupts.expire_due(later(seconds=61))
    assert released.resume_job_id is None and not released.again  # ... its sweeper dies here
    assert await storage.interrupts.expire_due(later(seconds=62)) == []

    [again] = await storage.interrupts.expire_due(later(seconds=61) + GRANT_LEASE)
    assert (again.outcome, again.record.id, again.record.state) == ("released", rid, "approved")
    assert again.again  # made final before: its decision is not counted a second time
    assert again.record.decided_at == later(seconds=1) and await _jobs(storage) == 0
    assert await storage.interrupts.grant_stored(rid, now=later(seconds=95)) is not None
    assert await storage.interrupts.expire_due(later(seconds=61) + GRANT_LEASE * 3) == []
    assert await _jobs(storage) == 1


async def test_an_undone_trust_leaves_nothing_waiting_for_a_grant(storage: Storage) -> None:
    """Undone in the window, then approved by a plain click: the run resumes at that
    decision's window end, without waiting for any grant."""
    rid = await _trust_held(storage)
    undone = await storage.interrupts.undo(
        rid, "UBOB", now=later(seconds=2), channel="CAPPROVALS", message_ts=""
    )
    assert undone.status == "recorded"
    again = await storage.interrupts.decide(
        rid, "UBOB", Decision.approve(), args_digest=DIGEST, now=later(seconds=3)
    )
    assert again.status == "held"
    [released] = await storage.interrupts.expire_due(later(seconds=63))
    assert released.resume_job_id is not None and await _jobs(storage) == 1
