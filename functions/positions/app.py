"""The position stream's consumer: batches of position messages, put on the stream by API
Gateway from the workers' sockets (no Lambda per report), written to Redis a batch at a time.
Redis out of reach fails the batch, which the event source mapping retries while the
positions are young enough to matter (template.yaml, PositionsFunction)."""

from typing import Any

from aws_lambda_powertools.utilities.data_classes import KinesisStreamEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch.entrypoints import lambda_entrypoint
from dispatch.observability import count, logger
from dispatch.workers import locations, stream


def write_positions(event: dict[str, Any], _: LambdaContext) -> dict[str, int]:
    reports, dropped = [], 0
    for record in KinesisStreamEvent(event).records:
        data = record.kinesis
        one = stream.report_of(
            data.partition_key, data.data_as_bytes(), data.approximate_arrival_timestamp
        )
        if one is None:
            dropped += 1
        else:
            reports.append(one)
    written = locations.report_many(reports)
    if dropped:
        logger.warning("position records dropped", extra={"dropped": dropped})
        count("PositionRecordsDropped", dropped)
    return {"written": written, "dropped": dropped}


lambda_handler = lambda_entrypoint(write_positions)
