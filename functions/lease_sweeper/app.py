"""Scheduled every minute: expire jobs whose window ended and reopen expired assignments, first
and again last; between them, each within its share of the period, the business's choice
deadlines, idempotency keys past 24 hours, the market's curve for the `likely` offer policy
when it is due, the next wave of an offer round whose message was lost, and worker positions
nobody has reported for an hour (dispatch.sweeper).
Relaying the outbox is another function's duty (outbox_relay): a backlog of events never
holds up a lease."""

from dataclasses import asdict

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.entrypoints import scheduled
from dispatch.observability import count, logger
from dispatch.sweeper import SweepIncomplete, SweepReport, sweep

SAFETY_MARGIN_MS = 5_000  # stop starting batches this long before the function would time out


def sweep_once(context: LambdaContext) -> dict[str, int | bool]:
    def time_left() -> bool:
        return context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS

    try:
        report = db.run(lambda conn: sweep(conn, time_left))
    except SweepIncomplete as incomplete:  # the leases had both turns: say so, then fail (alarm)
        done(incomplete.report)
        raise
    return done(report)


def done(report: SweepReport) -> dict[str, int | bool]:
    count("LeasesReopened", report.reopened)
    logger.info("sweep done", extra=asdict(report))
    return asdict(report)


lambda_handler = scheduled(sweep_once)
