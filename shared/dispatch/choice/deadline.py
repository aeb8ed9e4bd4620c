"""The business's deadline to choose, kept by the lease sweeper.

When a business_choice job's `choose_by` passes and nobody holds it: with `auto_pick`, the
best applicant who can be assigned now is assigned (`sql.BEST_APPLICANT` says what best is),
through the very assign the business's own goes through (one conditional UPDATE: an assign
racing it gives one winner); with nobody to pick, or without `auto_pick`, the business hears
`job.unfilled` with a reason, once per round. The job stays open: the business may still
assign, workers may still apply, until its window ends. Its events (job.assigned,
job.unfilled) are relayed right after they commit, and otherwise by the outbox relay's
catch-up, as every event is (dispatch.outbox).
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from dispatch.choice import commands, sql
from dispatch.db import Connection
from dispatch.errors import DispatchError
from dispatch.observability import logger
from dispatch.outbox import relay

DEADLINE = "system:choice-deadline"


@dataclass(frozen=True)
class DeadlineReport:
    picked: int
    unfilled: int


def pass_deadlines(
    conn: Connection, batch_size: int, keep_going: Callable[[], bool] = lambda: True
) -> DeadlineReport:
    """Keep the deadlines that passed, a job at a time while `keep_going`; a job left is still
    due on the next pass."""
    picked = unfilled = 0
    for job in sql.DUE_CHOICES.all(conn, {"batch_size": batch_size}):
        if not keep_going():
            break
        if job["auto_pick"]:
            outcome = _pick(conn, job)
            picked += outcome == "picked"
            if outcome != "nobody":
                continue  # picked, or lost a race: the next pass looks again
        params: sql.UnfilledParams = {
            "job_id": job["id"],
            "version": job["version"],
            "actor": DEADLINE,
        }
        if sql.CHOICE_UNFILLED.all(conn, params):
            unfilled += 1
            relay.after_commit(conn, job["id"])  # its job.unfilled, now
    return DeadlineReport(picked, unfilled)


def _pick(conn: Connection, job: sql.DueChoice) -> Literal["picked", "nobody", "lost"]:
    """Assign the best applicant who can be assigned now. "lost": the assign lost a race (to
    the business's, or to the applicant's accept elsewhere)."""
    best = sql.BEST_APPLICANT.one(conn, {"job_id": job["id"]})
    if best is None:
        return "nobody"
    try:
        commands.assign(
            conn, job["id"], commands.AUTO_PICK, best["worker_id"], None, job["business_id"]
        )
    except DispatchError as lost:
        logger.info("auto-pick lost", extra={"job_id": str(job["id"]), "code": lost.code.value})
        return "lost"
    relay.after_commit(conn, job["id"])  # its job.assigned, now, as a handler's change is
    return "picked"
