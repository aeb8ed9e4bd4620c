"""Scheduled every minute: expire jobs whose window ended, reopen expired assignments, remove
idempotency keys past 24 hours, refit the market's curve for the `likely` offer policy when it
is due, send again the next wave of an offer round whose message was lost, and forget worker
positions nobody has reported for an hour.
Relaying the outbox is another function's duty (outbox_relay): a backlog of events never
holds up a lease."""

from dataclasses import asdict

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.entrypoints import scheduled
from dispatch.observability import count, logger
from dispatch.sweeper import sweep
from dispatch.workers import locations

SAFETY_MARGIN_MS = 5_000  # stop starting batches this long before the function would time out


def sweep_once(context: LambdaContext) -> dict[str, int | bool]:
    def time_left() -> bool:
        return context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS

    report = db.run(lambda conn: sweep(conn, time_left))
    count("LeasesReopened", report.reopened)
    done = {**asdict(report), "positions_pruned": locations.prune_if_reachable()}
    logger.info("sweep done", extra=done)
    return done


lambda_handler = scheduled(sweep_once)
