"""The Lambda entrypoints every function shares, whatever calls it (API Gateway, an SQS queue,
a schedule): settings read at import (cold start), so that a bad environment fails the init
with one log line instead of the first invocation; every log line of an invocation carrying
its context (the function, the cold start, the request id or the queue message); the metrics
recorded during an invocation flushed at its end.

API functions use `dispatch.http.resolver.entrypoint`, built on `lambda_entrypoint`; queue
consumers use `queue_consumer`, scheduled functions `scheduled`.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools.utilities.typing import LambdaContext

from dispatch.config import settings
from dispatch.observability import count, logger, metrics

if TYPE_CHECKING:  # the batch utilities are for the queue consumers: API functions never load them
    from aws_lambda_powertools.utilities.batch.base import BasePartialBatchProcessor
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

T = TypeVar("T")
Handler = Callable[[dict[str, Any], LambdaContext], T]


def lambda_entrypoint(work: Handler[T], correlation_id_path: str | None = None) -> Handler[T]:
    """`work` as a Lambda handler: settings read now (at import), logs with the invocation's
    context (and its correlation id, when the event has one at `correlation_id_path`), metrics
    flushed when it returns or raises."""
    settings()

    @logger.inject_lambda_context(correlation_id_path=correlation_id_path, clear_state=True)
    @metrics.log_metrics
    def lambda_handler(event: dict[str, Any], context: LambdaContext) -> T:
        return work(event, context)

    return lambda_handler


def queue_consumer(
    handle: Callable[["SQSRecord"], None],
    processor: "BasePartialBatchProcessor",
    batch_first: Callable[[list["SQSRecord"]], None] | None = None,
) -> Handler[dict[str, Any]]:
    """An SQS consumer that reports partial failures (the queue's event source mapping has
    ReportBatchItemFailures): each message is handled on its own, its log lines carry its
    `message_id`, and one that fails is logged with the reason and counted
    (`MessagesFailed`); it goes back to the queue, to be received again after the visibility
    timeout and, after a few receives, to the dead-letter queue.

    `batch_first` does the whole batch's work at once, before its messages are handled one by
    one (which then finds little or nothing left to do); where it fails, it is logged and the
    messages do the rest, so only a message that fails on its own is retried."""

    from aws_lambda_powertools.utilities.batch import process_partial_response
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

    def each(record: "SQSRecord") -> None:
        logger.append_keys(message_id=record.message_id)
        try:
            handle(record)
        except Exception:
            count("MessagesFailed")
            logger.warning(
                "message failed; it goes back to the queue",
                extra={"receive_count": record.attributes.approximate_receive_count},
                exc_info=True,
            )
            raise
        finally:
            logger.remove_keys(["message_id"])

    def consume(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        if batch_first is not None:
            try:
                batch_first([SQSRecord(record) for record in event["Records"]])
            except Exception:
                logger.info("the batch at once failed; its messages go one by one", exc_info=True)
        return dict(
            process_partial_response(
                event=event, record_handler=each, processor=processor, context=context
            )
        )

    return lambda_entrypoint(consume)


def scheduled(work: Callable[[LambdaContext], T]) -> Handler[T]:
    """A function run by a schedule (EventBridge Scheduler): the event carries nothing it
    needs; `work` gets the context (for the time it has left)."""
    return lambda_entrypoint(lambda event, context: work(context))
