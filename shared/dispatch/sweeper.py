"""The lease sweeper: hands expired assignments back to the market, forgets old idempotency keys,
refits the market's curve for the `likely` offer policy when it is due, and sends again the
next wave of an offer round whose message was lost.

Correctness never waits for it (an expired lease is claimable by accept at once); it makes
expired jobs visible as open again, tells the old holder's version it is dead, and emits the
`job.reopened` events that start a new round of offers.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

from dispatch import idempotency
from dispatch.choice import deadline
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.offers import market, waves


@dataclass(frozen=True)
class SweepReport:
    reopened: int
    expired_jobs: int
    batches: int
    expired_keys: int
    auto_picked: int = 0
    unfilled_choices: int = 0
    market_refit: bool = False
    rounds_resumed: int = 0


def sweep(conn: Connection, keep_going: Callable[[], bool] = lambda: True) -> SweepReport:
    """Expire the jobs whose window ended and nobody holds, then reopen the expired leases,
    batch after batch until a batch comes back short or time runs out.

    Between full batches the sweeper rests in proportion to the work it just did (it works
    `DISPATCH_SWEEP_DUTY` of the time), so that a large backlog never crowds out the accepts
    and check-ins that the market is making at the same moment.
    """
    expired, expiring = _drain(conn, commands.expire_ended, keep_going)
    reopened, reopening = _drain(conn, commands.reopen_expired, keep_going)
    choices = deadline.pass_deadlines(conn, settings().sweep_batch_size) if keep_going() else None
    keys = idempotency.expire(conn, settings().idempotency_ttl_hours)
    # The market's curve, for the policy that reads it (and only then: nearest needs none).
    refit = settings().offer_policy == "likely" and keep_going() and market.refit_if_due(conn)
    resumed = waves.resume_stalled_rounds(conn, settings().sweep_batch_size) if keep_going() else 0
    return SweepReport(
        reopened,
        expired,
        expiring + reopening,
        keys,
        choices.picked if choices else 0,
        choices.unfilled if choices else 0,
        refit,
        resumed,
    )


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
