"""Fixtures for the AWS side of delivery: the queues (moto) and a tap on the bus."""

import json
import os

import boto3
import pytest

from dispatch import db
from dispatch_local.embedded import outbox_dlq_name
from tests.support import on_the_queue


@pytest.fixture(scope="session")
def tap(aws_stand_in: str) -> str:
    """A queue subscribed to everything on the bus: what a downstream consumer would see."""
    sqs, events = boto3.client("sqs"), boto3.client("events")
    url: str = sqs.create_queue(QueueName="dispatch-test-tap")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    bus = os.environ["EVENT_BUS_NAME"]
    events.put_rule(
        Name="tap", EventBusName=bus, EventPattern=json.dumps({"source": ["dispatch.jobs"]})
    )
    events.put_targets(Rule="tap", EventBusName=bus, Targets=[{"Id": "tap", "Arn": arn}])
    return url


@pytest.fixture
def queues(conn: db.Connection, tap: str) -> dict[str, str]:
    """The outbox queue, its dead-letter queue, the offer queue and the tap, emptied."""
    sqs = boto3.client("sqs")
    outbox, offers = os.environ["OUTBOX_QUEUE_URL"], os.environ["OFFER_QUEUE_URL"]
    dlq = sqs.get_queue_url(QueueName=outbox_dlq_name(os.environ["EVENT_BUS_NAME"]))["QueueUrl"]
    for url in (outbox, dlq, offers, tap):
        on_the_queue(url)  # whatever earlier tests left there (PurgeQueue allows one a minute)
    return {"outbox": outbox, "dlq": dlq, "offers": offers, "tap": tap}
