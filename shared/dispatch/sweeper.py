"""The lease sweeper: hands expired assignments back to the market, and does the market's other
housekeeping: choice deadlines, old idempotency keys, the offers' answers folded into the
market's and the workers' records and the market's curve for the `likely` offer policy when it
is due, the next wave of an offer round whose message was lost, and worker
positions nobody reported for an hour.

Correctness never waits for it (an expired lease is claimable by accept at once); it makes
expired jobs visible as open again, tells the old holder's version it is dead, and emits the
`job.reopened` events that start a new round of offers.

Leases first and last (issue 34 point 8: a pass that resent 100 stalled rounds one queue call
at a time after the leases ran 20-36 s, and leases outlived their end by up to 19.6 s). A pass
runs the lease duties (expire, reopen), then each other duty within its share of the sweep
period (`DUTY_SHARE`), then the lease duties again, so that a lease which ended while the other
duties ran waits for no more than their shares. Another duty that fails is logged and counted,
and the leases still get their second turn; the run then fails (the alarm) once they have.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from dispatch import idempotency
from dispatch.choice import deadline
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.observability import count, logger
from dispatch.offers import market, waves
from dispatch.workers import locations

# The longest share of the sweep period one duty besides the leases' may take. Five such
# duties take at most 5/8 of it, so the leases' second turn comes within the period and a
# lease is reopened within two periods of its end (what `make bench-outage` holds).
DUTY_SHARE = 1 / 8

T = TypeVar("T")


@dataclass(frozen=True)
class SweepReport:
    reopened: int
    expired_jobs: int
    batches: int
    expired_keys: int
    auto_picked: int = 0
    unfilled_choices: int = 0
    market_refit: bool = False
    answers_folded: int = 0  # offers whose answers this pass folded (market.fold)
    rounds_resumed: int = 0
    positions_pruned: int = 0
    rounds_left: int = 0  # stalled rounds found and not sent: the next pass sends them
    duties_cut_short: int = 0  # duties that used up their share (their rest waits a pass)
    duties_failed: int = 0


@dataclass
class _Pass:
    conn: Connection
    keep_going: Callable[[], bool]
    cut_short: int = 0
    failures: list[str] = field(default_factory=list)

    def duty(self, name: str, work: Callable[[Callable[[], bool]], T], nothing: T) -> T:
        """Run one duty besides the leases' within its share of the period: `work` is given
        whether it may start another step. A duty that fails gives `nothing`; a dead
        connection fails the pass at once (db.run starts it again, leases first, on a new one).
        """
        if not self.keep_going():
            return nothing
        ends = time.monotonic() + settings().sweep_interval_seconds * DUTY_SHARE
        asked, cut = 0, False

        def within_share() -> bool:
            # Its first step always: a share shorter than one step still makes progress.
            nonlocal asked, cut
            asked += 1
            if self.keep_going() and (asked == 1 or time.monotonic() < ends):
                return True
            cut = True
            return False

        try:
            return work(within_share)
        except Exception:
            if self.conn.closed or self.conn.broken:
                raise
            logger.exception("sweep duty failed; the leases still get their turn",
                             extra={"duty": name})  # fmt: skip
            count("SweepDutiesFailed")
            self.failures.append(name)
            return nothing
        finally:
            self.cut_short += cut


def sweep(conn: Connection, keep_going: Callable[[], bool] = lambda: True) -> SweepReport:
    """One pass: the lease duties, each other duty within its share, the lease duties again.

    Each lease duty goes batch after batch until a batch comes back short or time runs out.
    Between full batches the sweeper rests in proportion to the work it just did (it works
    `DISPATCH_SWEEP_DUTY` of the time), so that a large backlog never crowds out the accepts
    and check-ins that the market is making at the same moment.
    """
    size = settings().sweep_batch_size
    first = _leases(conn, keep_going)
    p = _Pass(conn, keep_going)
    choices = p.duty("choice deadlines", lambda go: deadline.pass_deadlines(conn, size, go), None)
    keys = p.duty(
        "idempotency keys",
        lambda go: idempotency.expire(conn, settings().idempotency_ttl_hours, size, go),
        0,
    )
    # The answers folded, then the market's curve when due, for the policy that reads them (and
    # only then: nearest needs neither).
    folded, refit = (
        p.duty("market curve", lambda _: market.keep(conn), (0, False))
        if settings().offer_policy == "likely"
        else (0, False)
    )
    rounds = p.duty(
        "stalled offer rounds",
        lambda go: waves.resume_stalled_rounds(conn, size, go),
        waves.ResumeReport(0, 0),
    )
    pruned = p.duty("worker positions", lambda _: locations.prune_if_reachable(), 0)
    last = _leases(conn, keep_going)
    if p.cut_short:
        count("SweepDutiesCutShort", p.cut_short)
    report = SweepReport(
        reopened=first.reopened + last.reopened,
        expired_jobs=first.expired + last.expired,
        batches=first.batches + last.batches,
        expired_keys=keys,
        auto_picked=choices.picked if choices else 0,
        unfilled_choices=choices.unfilled if choices else 0,
        market_refit=refit,
        answers_folded=folded,
        rounds_resumed=rounds.resumed,
        positions_pruned=pruned,
        rounds_left=rounds.left,
        duties_cut_short=p.cut_short,
        duties_failed=len(p.failures),
    )
    if p.failures:
        raise SweepIncomplete(report, p.failures)
    return report


class SweepIncomplete(Exception):
    """Some duty besides the leases' failed (each is logged); the leases had both turns."""

    def __init__(self, report: SweepReport, failed: list[str]) -> None:
        super().__init__(f"sweep duties failed: {', '.join(failed)}")
        self.report = report
        self.failed = failed


@dataclass(frozen=True)
class _LeaseTurn:
    expired: int
    reopened: int
    batches: int


def _leases(conn: Connection, keep_going: Callable[[], bool]) -> _LeaseTurn:
    """Expire the jobs whose window ended and nobody holds, then reopen the expired leases."""
    expired, expiring = _drain(conn, commands.expire_ended, keep_going)
    reopened, reopening = _drain(conn, commands.reopen_expired, keep_going)
    return _LeaseTurn(expired, reopened, expiring + reopening)


def _drain(
    conn: Connection,
    batch_of: Callable[[Connection, int], list[Job]],
    keep_going: Callable[[], bool],
) -> tuple[int, int]:
    """(jobs moved, batches run) of one kind of sweep."""
    batch_size, duty = settings().sweep_batch_size, settings().sweep_duty
    moved = batches = 0
    while keep_going():
        began = time.monotonic()
        batch = batch_of(conn, batch_size)
        batches += 1
        moved += len(batch)
        if len(batch) < batch_size:
            break
        time.sleep((time.monotonic() - began) * (1 / duty - 1))
    return moved, batches
