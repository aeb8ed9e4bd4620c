"""On the local stack, a job's events reach the local bus within a second or two."""

import json
import time
from typing import Any
from urllib.parse import urlsplit

import boto3
import requests

from dispatch.db import Connection
from tests.contract import assert_valid_event
from tests.e2e.client import Client
from tests.support import job_body

POLL_SECONDS = 0.1


def tap_the_bus(stack: str) -> str:
    """A queue that receives everything on the stack's own bus (see conftest); its URL."""
    bus = f"dispatch-e2e-{urlsplit(stack).port}"
    sqs, events = boto3.client("sqs"), boto3.client("events")
    tap: str = sqs.create_queue(QueueName=f"{bus}-tap")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=tap, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="tap", EventBusName=bus, EventPattern=json.dumps({"source": ["dispatch.jobs"]})
    )
    events.put_targets(Rule="tap", EventBusName=bus, Targets=[{"Id": "tap", "Arn": arn}])
    return tap


def events_of(tap: str, job_id: str, count: int) -> list[dict[str, Any]]:
    """The job's events as they arrive on the tap, until `count` came or 10 s passed."""
    sqs, sent_at = boto3.client("sqs"), time.monotonic()
    seen: list[dict[str, Any]] = []
    while len(seen) < count and time.monotonic() - sent_at < 10:  # a deadline, not a measurement
        for message in sqs.receive_message(QueueUrl=tap, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            event = json.loads(message["Body"])
            if event["detail"]["job_id"] == job_id:
                seen.append(event)
        time.sleep(POLL_SECONDS)
    return seen


def test_created_and_accepted_job_events_reach_the_bus(stack: str, conn: Connection) -> None:
    tap = tap_the_bus(stack)
    business = Client(stack, "biz-bus", "business")
    washer = Client(stack, "washer-bus", "worker")
    washer.send("PUT", "/workers/me", {"skills": ["wash"]})
    job = business.send("POST", "/jobs", job_body(["wash"])).json()
    washer.send("POST", f"/jobs/{job['id']}/accept", {})
    seen = [(e["detail-type"], e["detail"]["version"]) for e in events_of(tap, job["id"], 2)]
    assert seen == [("job.created", 1), ("job.assigned", 2)]  # both, in version order


def test_a_worker_near_a_new_job_gets_an_offer_within_seconds(stack: str) -> None:
    tap = tap_the_bus(stack)
    business = Client(stack, "biz-offers", "business")
    ironer = Client(stack, "ironer-near", "worker")
    ironer.send("PUT", "/workers/me", {"skills": ["iron"]})
    assert ironer.send("PUT", "/workers/me/location", {"lat": 40.0, "lng": -3.7}).status_code == 204
    job = business.send("POST", "/jobs", job_body(["iron"], lat=40.01, lng=-3.7)).json()

    created, offered = events_of(tap, job["id"], 2)
    assert created["detail-type"] == "job.created"
    assert offered["detail-type"] == "offer.created"
    assert offered["detail"]["data"]["worker_id"] == "ironer-near"
    assert 1_100 < offered["detail"]["data"]["distance_m"] < 1_125  # 0.01 degree of latitude

    # The nearby list matches the contract for the same worker.
    nearby = ironer.send("GET", "/jobs/nearby?lat=40.0&lng=-3.7").json()["jobs"]
    assert [j["id"] for j in nearby] == [job["id"]]
    # Redis and Postgres measure on slightly different spheres: a metre apart at most here.
    assert abs(nearby[0]["distance_m"] - offered["detail"]["data"]["distance_m"]) < 1


def test_what_a_consumer_of_the_bus_receives_matches_the_served_asyncapi(stack: str) -> None:
    tap = tap_the_bus(stack)
    document = requests.get(f"{stack}/asyncapi.json", timeout=10).json()
    business = Client(stack, "biz-contract", "business")
    washer = Client(stack, "washer-contract", "worker")
    washer.send("PUT", "/workers/me", {"skills": ["wash"]})
    washer.send("PUT", "/workers/me/location", {"lat": 41.0, "lng": 2.0})
    job = business.send("POST", "/jobs", job_body(["wash"], lat=41.001, lng=2.0)).json()
    received = events_of(tap, job["id"], 2)  # created, then the offer to the washer
    held = washer.send("POST", f"/jobs/{job['id']}/accept", {}).json()
    washer.send("POST", f"/jobs/{job['id']}/transitions", {"event": "release", "version": 2})
    received += events_of(tap, job["id"], 2)  # assigned, released (nobody else to offer)

    kinds = [e["detail-type"] for e in received]
    assert kinds == ["job.created", "offer.created", "job.assigned", "job.released"]
    for event in received:
        assert event["source"] == "dispatch.jobs"
        assert event["detail-type"] == event["detail"]["type"]
        assert_valid_event(event["detail"], document)
    assigned = next(e for e in received if e["detail-type"] == "job.assigned")
    assert assigned["detail"]["data"] == held  # exactly what the accept answered
