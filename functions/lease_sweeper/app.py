"""Scheduled every minute: reopen expired assignments, remove idempotency keys past 24 hours."""

from dataclasses import asdict
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import db
from dispatch.observability import count, logger, metrics
from dispatch.sweeper import sweep

SAFETY_MARGIN_MS = 5_000  # stop starting batches this long before the function would time out


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, int]:
    report = db.run(
        lambda conn: sweep(conn, lambda: context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS)
    )
    count("LeasesReopened", report.reopened)
    logger.info("sweep done", extra=asdict(report))
    return asdict(report)
