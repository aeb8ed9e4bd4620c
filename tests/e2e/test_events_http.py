"""On the local stack, a job's events reach the local bus within a second or two."""

import json
import time
from urllib.parse import urlsplit

import boto3

from dispatch.db import Connection
from tests.e2e.client import Client
from tests.support import job_body

POLL_SECONDS = 0.1


def test_created_and_accepted_job_events_reach_the_bus(stack: str, conn: Connection) -> None:
    bus = f"dispatch-e2e-{urlsplit(stack).port}"  # the stack's own bus (see conftest)
    sqs, events = boto3.client("sqs"), boto3.client("events")
    tap = sqs.create_queue(QueueName=f"{bus}-tap")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=tap, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="tap", EventBusName=bus, EventPattern=json.dumps({"source": ["dispatch.jobs"]})
    )
    events.put_targets(Rule="tap", EventBusName=bus, Targets=[{"Id": "tap", "Arn": arn}])

    business = Client(stack, "biz-bus", "business")
    washer = Client(stack, "washer-bus", "worker")
    washer.send("PUT", "/workers/me", {"skills": ["wash"]})
    job = business.send("POST", "/jobs", job_body(["wash"])).json()
    washer.send("POST", f"/jobs/{job['id']}/accept", {})
    sent_at = time.monotonic()

    seen: list[tuple[str, int]] = []
    while len(seen) < 2 and time.monotonic() - sent_at < 10:  # a deadline, not a measurement
        for message in sqs.receive_message(QueueUrl=tap, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            event = json.loads(message["Body"])
            if event["detail"]["job_id"] == job["id"]:
                seen.append((event["detail-type"], event["detail"]["version"]))
        time.sleep(POLL_SECONDS)
    assert seen == [("job.created", 1), ("job.assigned", 2)]  # both, in version order
