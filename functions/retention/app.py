"""Scheduled every hour: finished jobs past the hot retention leave the hot tables, each
batch archived to the archive bucket before it is deleted (dispatch.retention,
docs/retention.md). Signs in as the archivist (dispatch_archivist), not the application role."""

from dataclasses import asdict

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch import aws, db, retention
from dispatch.entrypoints import scheduled
from dispatch.observability import count, logger

SAFETY_MARGIN_MS = 30_000  # stop starting batches this long before the function would time out


def retire_once(context: LambdaContext) -> dict[str, int]:
    def time_left() -> bool:
        return context.get_remaining_time_in_millis() > SAFETY_MARGIN_MS

    report = db.run(lambda conn: retention.retire(conn, aws.client("s3"), time_left))
    count("HistoryRowsArchived", report.rows_archived)
    count("HistoryJobsLeft", report.left)
    logger.info("retention done", extra=asdict(report))
    return asdict(report)


lambda_handler = scheduled(retire_once)
