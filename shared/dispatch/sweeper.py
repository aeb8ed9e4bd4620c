"""The lease sweeper: hands expired assignments back to the market, forgets old idempotency keys.

Correctness never waits for it (an expired lease is claimable by accept at once); it makes
expired jobs visible as open again, tells the old holder's version it is dead, and emits the
`job.reopened` events that start a new round of offers.
"""

from collections.abc import Callable
from dataclasses import dataclass

from dispatch import idempotency
from dispatch.config import settings
from dispatch.db import Connection
from dispatch.jobs import commands


@dataclass(frozen=True)
class SweepReport:
    reopened: int
    batches: int
    expired_keys: int


def sweep(conn: Connection, keep_going: Callable[[], bool] = lambda: True) -> SweepReport:
    """Reopen batch after batch until a batch comes back short or time runs out."""
    batch_size = settings().sweep_batch_size
    reopened = batches = 0
    while keep_going():
        batch = commands.reopen_expired(conn, batch_size)
        batches += 1
        reopened += len(batch)
        if len(batch) < batch_size:
            break
    expired = idempotency.expire(conn, settings().idempotency_ttl_hours)
    return SweepReport(reopened=reopened, batches=batches, expired_keys=expired)
