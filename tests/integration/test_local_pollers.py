"""The local stack's pollers of FIFO queues (dispatch_local.gateway.poll), on moto's server: they
never long-poll a FIFO queue (moto spins through the whole wait while every visible message's
group is in flight, with the receive lock held), and they still drain it, a group's messages
in order."""

import uuid
from typing import Any

import boto3

from dispatch_local.gateway import poll


def fifo_queue() -> str:
    sqs = boto3.client("sqs")
    url: str = sqs.create_queue(
        QueueName=f"pollers-{uuid.uuid4().hex[:12]}.fifo",
        Attributes={"FifoQueue": "true", "VisibilityTimeout": "60"},
    )["QueueUrl"]
    return url


def send(url: str, group: str, body: str) -> None:
    boto3.client("sqs").send_message(
        QueueUrl=url,
        MessageBody=body,
        MessageGroupId=group,
        MessageDeduplicationId=str(uuid.uuid4()),
    )


def test_a_fifo_queue_whose_groups_are_in_flight_is_not_long_polled(aws_stand_in: str) -> None:
    url = fifo_queue()
    send(url, "job-1", "v1")
    send(url, "job-1", "v2")
    sqs = boto3.client("sqs")
    held = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]  # another poller
    waits: list[int] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        waits.append(int(params.get("WaitTimeSeconds", 0)))

    sqs.meta.events.register("provide-client-params.sqs.ReceiveMessage", record)
    handled: list[dict[str, Any]] = []
    assert poll(sqs, url, 10, handled.append) == 0  # v2 waits for v1's batch
    assert waits == [0], "a long poll of moto's FIFO queue spins while the group is in flight"
    assert held[0]["Body"] == "v1" and handled == []


def test_the_pollers_drain_a_fifo_queue_in_each_groups_order(aws_stand_in: str) -> None:
    url = fifo_queue()
    for version in range(1, 4):
        for job in ("job-1", "job-2", "job-3"):
            send(url, job, f"{job}:{version}")
    sqs = boto3.client("sqs")
    seen: list[str] = []

    def handle(event: dict[str, Any]) -> None:
        seen.extend(record["body"] for record in event["Records"])

    for _ in range(20):
        if not poll(sqs, url, 10, handle):
            break
    attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "0"
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == "0"  # all deleted
    for job in ("job-1", "job-2", "job-3"):
        assert [b for b in seen if b.startswith(job)] == [f"{job}:{v}" for v in range(1, 4)]
