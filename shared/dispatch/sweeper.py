"""The lease sweeper: hands expired assignments back to the market, and does the market's other
housekeeping, each a named duty (`DUTIES`): choice deadlines, stalled offer rounds, the offers'
answers folded into the market's and the workers' records, the market's curve for the `likely`
offer policy, old idempotency keys, and worker positions nobody reported for an hour.

Correctness never waits for it (an expired lease is claimable by accept at once); it makes
expired jobs visible as open again, tells the old holder's version it is dead, and emits the
`job.reopened` events that start a new round of offers.

Leases first (issue 34 point 8, issue 36 point 4). A pass runs the lease duties (expire,
reopen) first, again before any other duty once `LEASE_GAP` of the sweep period has passed
since their last turn, and last. Every other duty has its own schedule (`every`: each pass, or
seconds after its last run, kept in `sweep_duties`) and its own time budget (`share` of the
sweep period): a duty that is not due is not run, one that runs out of its budget stops
between steps and is due again on the next pass, one that fails is logged and counted. So a
slow duty holds up neither the leases (their turn comes right after it) nor the duties after
it (each has its own budget). The run fails (the alarm) once the leases had their last turn.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypedDict

from dispatch import idempotency
from dispatch.choice import deadline
from dispatch.config import settings
from dispatch.config.offer_policy import offer_policy_settings
from dispatch.config.offers import offer_settings
from dispatch.config.sweeper import sweeper_settings
from dispatch.db import Connection, Query
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.observability import count, logger
from dispatch.offers import market, waves
from dispatch.workers import locations

# The leases' turn comes again before the next duty once this share of the sweep period has
# passed since their last: a lease that ends during a pass waits at most that, plus one duty's
# last step, plus a lease turn (`make bench-outage` holds it to two sweep periods).
LEASE_GAP = 1 / 8

EVERY_PASS = 0.0
KEYS_EVERY_S = 3600.0  # keys live a day (DISPATCH_IDEMPOTENCY_TTL_HOURS): an hour late is nothing
POSITIONS_EVERY_S = 300.0  # positions are forgotten after an hour; offers ignore stale ones anyway

Work = Callable[[Connection, Callable[[], bool]], dict[str, Any]]


@dataclass(frozen=True)
class Duty:
    """One of the sweeper's duties besides the leases'. `work` is given whether it may start
    another step, and answers what it did (the report's fields)."""

    name: str
    # Seconds after its last run it is due again (`EVERY_PASS`: on each pass); None: these
    # settings need none of it (the market's duties under the `nearest` policy).
    every: Callable[[], float | None]
    share: float  # of the sweep period: its time budget in a pass
    work: Work


def _choice_deadlines(conn: Connection, go: Callable[[], bool]) -> dict[str, Any]:
    done = deadline.pass_deadlines(conn, sweeper_settings().sweep_batch_size, go)
    return {"auto_picked": done.picked, "unfilled_choices": done.unfilled}


def _stalled_rounds(conn: Connection, go: Callable[[], bool]) -> dict[str, Any]:
    done = waves.resume_stalled_rounds(conn, sweeper_settings().sweep_batch_size, go)
    return {"rounds_resumed": done.resumed, "rounds_left": done.left}


def _keys(conn: Connection, go: Callable[[], bool]) -> dict[str, Any]:
    ttl_hours, batch_size = settings().idempotency_ttl_hours, sweeper_settings().sweep_batch_size
    return {"expired_keys": idempotency.expire(conn, ttl_hours, batch_size, go)}


def _likely() -> bool:
    """The market's duties serve the `likely` policy only (`nearest` reads neither)."""
    return offer_settings().offer_policy == "likely"


# In the order a pass runs them: what people wait for first, housekeeping last.
DUTIES = (
    Duty("choice_deadlines", lambda: EVERY_PASS, 1 / 8, _choice_deadlines),
    Duty("stalled_offer_rounds", lambda: EVERY_PASS, 1 / 8, _stalled_rounds),
    # The policy reads the offers since the last fold live: fold each pass, so they stay few.
    Duty("market_answers", lambda: EVERY_PASS if _likely() else None, 1 / 8,
         lambda conn, _: {"answers_folded": market.fold(conn)}),
    Duty("market_curve",
         lambda: offer_policy_settings().offer_market_refit_seconds if _likely() else None, 1 / 16,
         lambda conn, _: {"market_refit": market.refit(conn)}),
    Duty("idempotency_keys", lambda: KEYS_EVERY_S, 1 / 8, _keys),
    Duty("worker_positions", lambda: POSITIONS_EVERY_S, 1 / 16,
         lambda _, __: {"positions_pruned": locations.prune_if_reachable()}),
)  # fmt: skip

# What became of each duty in a pass (SweepReport.duties, the "sweep duties" log line).
RAN, NOT_DUE, CUT_SHORT, FAILED = "ran", "not due", "cut short", "failed"


class LastRun(TypedDict):
    now: datetime
    duty: str | None  # None: no duty ran yet (the one row is the clock's)
    ran_at: datetime | None


class DutyRun(TypedDict):
    duty: str
    ran_at: datetime


# The scheduled duties' last runs to their end, and the pass's start by the database's clock.
LAST_RUNS: Query[None, LastRun] = Query("""
SELECT n.now, d.duty, d.ran_at FROM (SELECT now() AS now) n LEFT JOIN sweep_duties d ON true
""")
RECORD_RUN: Query[DutyRun, None] = Query("""
INSERT INTO sweep_duties (duty, ran_at) VALUES (%(duty)s, %(ran_at)s)
ON CONFLICT (duty) DO UPDATE SET ran_at = excluded.ran_at
""")


@dataclass(frozen=True)
class SweepReport:
    reopened: int
    expired_jobs: int
    batches: int
    expired_keys: int = 0
    auto_picked: int = 0
    unfilled_choices: int = 0
    market_refit: bool = False
    answers_folded: int = 0  # offers whose answers this pass folded (market.fold)
    rounds_resumed: int = 0
    positions_pruned: int = 0
    rounds_left: int = 0  # stalled rounds found and not sent: the next pass sends them
    duties_cut_short: int = 0  # duties that used up their budget (their rest waits a pass)
    duties_failed: int = 0
    lease_turns: int = 0  # first, last, and one after each duty that kept them waiting
    duties: dict[str, str] = field(default_factory=dict)  # each duty's outcome, by name


class SweepIncomplete(Exception):
    """Some duty besides the leases' failed (each is logged); the leases had their turns."""

    def __init__(self, report: SweepReport, failed: list[str]) -> None:
        super().__init__(f"sweep duties failed: {', '.join(failed)}")
        self.report = report
        self.failed = failed


def sweep(conn: Connection, keep_going: Callable[[], bool] = lambda: True) -> SweepReport:
    """One pass: the leases, each duty that is due within its budget (the leases again before
    it once `LEASE_GAP` has passed since their last turn), the leases again.

    Each lease duty goes batch after batch until a batch comes back short or time runs out.
    Between full batches the sweeper rests in proportion to the work it just did (it works
    `DISPATCH_SWEEP_DUTY` of the time), so that a large backlog never crowds out the accepts
    and check-ins that the market is making at the same moment.
    """
    p = _Pass(conn, keep_going)
    p.leases()
    rows = LAST_RUNS.all(conn, None)
    began: datetime = rows[0]["now"]
    last_runs = {r["duty"]: r["ran_at"] for r in rows if r["duty"] is not None}
    for duty in DUTIES:
        if time.monotonic() - p.leases_at >= LEASE_GAP * sweeper_settings().sweep_interval_seconds:
            p.leases()
        p.run(duty, began, last_runs.get(duty.name))
    p.leases()
    if p.cut_short:
        count("SweepDutiesCutShort", p.cut_short)
    report = SweepReport(
        **p.fields,
        duties_cut_short=p.cut_short,
        duties_failed=len(p.failures),
        lease_turns=p.lease_turns,
        duties=p.outcomes,
    )
    if p.failures:
        raise SweepIncomplete(report, p.failures)
    return report


@dataclass
class _Pass:
    conn: Connection
    keep_going: Callable[[], bool]
    fields: dict[str, Any] = field(
        default_factory=lambda: {"reopened": 0, "expired_jobs": 0, "batches": 0}
    )
    outcomes: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    cut_short: int = 0
    lease_turns: int = 0
    leases_at: float = 0.0  # time.monotonic() at the end of the leases' last turn

    def leases(self) -> None:
        """Expire the jobs whose window ended and nobody holds, then reopen the expired leases."""
        expired, expiring = _drain(self.conn, commands.expire_ended, self.keep_going)
        reopened, reopening = _drain(self.conn, commands.reopen_expired, self.keep_going)
        self.fields["expired_jobs"] += expired
        self.fields["reopened"] += reopened
        self.fields["batches"] += expiring + reopening
        self.lease_turns += 1
        self.leases_at = time.monotonic()

    def run(self, duty: Duty, began: datetime, last_run: datetime | None) -> None:
        """Run `duty` if it is due, within its budget; record a scheduled one's run to its end.
        A dead connection fails the pass at once (db.run starts it again, leases first, on a
        new one)."""
        every = duty.every()
        if every is None or not _due(every, began, last_run):
            self.outcomes[duty.name] = NOT_DUE
            return
        if not self.keep_going():
            self.outcomes[duty.name] = CUT_SHORT
            self.cut_short += 1
            return
        period = sweeper_settings().sweep_interval_seconds
        ends = time.monotonic() + period * duty.share
        asked, cut = 0, False

        def within_budget() -> bool:
            # Its first step always: a budget shorter than one step still makes progress.
            nonlocal asked, cut
            asked += 1
            if self.keep_going() and (asked == 1 or time.monotonic() < ends):
                return True
            cut = True
            return False

        try:
            self.fields.update(duty.work(self.conn, within_budget))
        except Exception:
            if self.conn.closed or self.conn.broken:
                raise
            logger.exception("sweep duty failed; the leases still get their turn",
                             extra={"duty": duty.name})  # fmt: skip
            count("SweepDutiesFailed")
            self.failures.append(duty.name)
            self.outcomes[duty.name] = FAILED
            return
        self.cut_short += cut
        self.outcomes[duty.name] = CUT_SHORT if cut else RAN
        if every != EVERY_PASS and not cut:
            RECORD_RUN.run(self.conn, {"duty": duty.name, "ran_at": began})


def _due(every: float, began: datetime, last_run: datetime | None) -> bool:
    """Due on the first pass that starts within half a sweep period of `every` after its last
    run began: passes start a period apart give or take a little (EventBridge's jitter, the
    length of the pass before), and an hourly duty must not wait an hour and a period."""
    if every == EVERY_PASS or last_run is None:
        return True
    slack = sweeper_settings().sweep_interval_seconds / 2
    return began - last_run >= timedelta(seconds=every - slack)


def _drain(
    conn: Connection,
    batch_of: Callable[[Connection, int], list[Job]],
    keep_going: Callable[[], bool],
) -> tuple[int, int]:
    """(jobs moved, batches run) of one kind of sweep."""
    batch_size, duty = sweeper_settings().sweep_batch_size, sweeper_settings().sweep_duty
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
