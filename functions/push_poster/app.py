"""The push poster, outside the VPC (API Gateway's management API is a public endpoint that
no VPC endpoint serves, and the stack has no NAT): the delivery queue's messages to their
connections (PostToConnection, DeleteConnection), and the connections found gone (410) onto
the gone queue, for the sender to forget. No database. The one function allowed
`execute-api:ManageConnections`."""

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from dispatch.entrypoints import queue_consumer
from dispatch.push import delivery


def post_record(record: SQSRecord) -> None:
    done = delivery.post_delivery(
        delivery.Delivery.model_validate_json(record.body),
        delivery.post_to_connection,
        delivery.delete_connection,
    )
    delivery.report_gone(done.gone)


lambda_handler = queue_consumer(post_record, BatchProcessor(event_type=EventType.SQS))
