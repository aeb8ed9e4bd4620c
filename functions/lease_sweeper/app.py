"""Scheduled every minute: the sweeper's duties (dispatch.sweeper.DUTIES), the leases first:
expire jobs whose window ended and reopen expired assignments, then each other duty that is
due (the business's choice deadlines, stalled offer rounds, the market's answers and curve for
the `likely` offer policy, idempotency keys past 24 hours, worker positions nobody has reported
for an hour) within its own time budget, the leases again whenever a duty kept them waiting,
and last. Relaying the outbox is another function's duty (outbox_relay): a backlog of events
never holds up a lease."""

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.entrypoints import scheduled
from dispatch.observability import count, logger
from dispatch.sweeper import SweepIncomplete, SweepReport, sweep

SAFETY_MARGIN_MS = 5_000  # stop starting batches this long before the function would time out


def sweep_once(context: LambdaContext) -> dict[str, Any]:
    def time_left() -> bool:
        return context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS

    try:
        report = db.run(lambda conn: sweep(conn, time_left))
    except SweepIncomplete as incomplete:  # the leases had their turns: say so, then fail (alarm)
        done(incomplete.report)
        raise
    return done(report)


def done(report: SweepReport) -> dict[str, Any]:
    count("LeasesReopened", report.reopened)
    answer = asdict(report)
    # Two lines, each short enough to read in `make dev`: what the pass did, then each duty's
    # outcome by name (ran, not due, cut short, failed).
    logger.info("sweep done", extra={k: v for k, v in answer.items() if k != "duties"})
    logger.info("sweep duties", extra=report.duties)
    return answer


lambda_handler = scheduled(sweep_once)
