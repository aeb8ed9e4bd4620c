"""A `kill -9` of the whole local stack in the middle of load, three times over: every event
that committed reaches the bus within 60 s of the restart, in version order per job.

The stack's queues live in its own AWS stand-in, which dies with it (as SQS would never do, and
as the local stack's does): what the queue had accepted is gone. The bus lives in the test's
stand-in, which survives, with a queue subscribed to everything on it (what a downstream
consumer receives). Found from outside before: 460 committed events never reached the bus,
marked published because the queue had accepted them."""

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
import requests

from dispatch import db
from dispatch_local.stack import start_stack, stop_stack
from tests.e2e.client import Client
from tests.support import job_body

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import DeleteMessageBatchRequestEntryTypeDef

BUS = "dispatch-crash-test"
CRASHES = 3
LOAD_SECONDS = 4.0  # at least; then until some event sits between queue and bus
CATCH_SECONDS = 60.0  # how long to wait for that moment on a loaded machine
DELIVERY_SECONDS = 60.0  # from the restart


@pytest.fixture
def crash_tap(aws_stand_in: str) -> str:
    """A queue on the surviving bus's stand-in, subscribed to every event on the bus."""
    sqs, events = boto3.client("sqs"), boto3.client("events")
    if BUS not in {b["Name"] for b in events.list_event_buses()["EventBuses"]}:
        events.create_event_bus(Name=BUS)
    url: str = sqs.create_queue(QueueName=f"{BUS}-tap")["QueueUrl"]
    sqs.purge_queue(QueueUrl=url)
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(Name="tap", EventBusName=BUS, EventPattern='{"source": ["dispatch.jobs"]}')
    events.put_targets(Rule="tap", EventBusName=BUS, Targets=[{"Id": "tap", "Arn": arn}])
    return url


@pytest.fixture
def crash_database(admin_url: str) -> Iterator[str]:
    from tests.conftest import create_database, drop_database

    url = create_database(admin_url)
    yield url
    drop_database(admin_url, url)


def start(database: str, home: Path, aws_stand_in: str) -> tuple[str, Any]:
    started = start_stack(
        database,
        home,
        # Its queues, photos and the rest in a stand-in of its own that dies with it ...
        AWS_ENDPOINT_URL="",
        # ... and the bus in the test's, which does not.
        AWS_ENDPOINT_URL_EVENTBRIDGE=aws_stand_in,
        EVENT_BUS_NAME=BUS,
        DISPATCH_LEASE_SECONDS="2",
        DISPATCH_SWEEP_INTERVAL_SECONDS="1",
    )
    return started


def load(base: str, stop: threading.Event, worker_count: int = 6) -> None:
    """Businesses post, workers race to accept, check in and release, until `stop`."""
    business = Client(base, "crash-business", "business")
    workers = [Client(base, f"crash-worker-{n}", "worker") for n in range(worker_count)]

    def work(me: Client) -> None:
        try:
            me.send("PUT", "/workers/me", {"skills": ["wash"]})
            while not stop.is_set():
                job = business.send("POST", "/jobs", job_body()).json()
                won = me.send("POST", f"/jobs/{job['id']}/accept", {})
                if won.status_code != 200:
                    continue
                held = won.json()
                checked = me.send(
                    "POST",
                    f"/jobs/{held['id']}/transitions",
                    {"event": "check_in", "version": held["version"]},
                ).json()
                me.send(
                    "POST",
                    f"/jobs/{held['id']}/transitions",
                    {"event": "release", "version": checked["version"]},
                )
        except (requests.RequestException, ValueError, KeyError):
            return  # the stack died under us: that is the point

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in workers]
    for thread in threads:
        thread.start()


def committed(conn: db.Connection) -> dict[str, tuple[str, int]]:
    rows = conn.execute("SELECT id::text, job_id::text, version FROM job_events").fetchall()
    return {row["id"]: (row["job_id"], row["version"]) for row in rows}


IN_FLIGHT = (
    "SELECT count(*) AS n FROM job_events WHERE relayed_at IS NOT NULL AND published_at IS NULL"
)


def in_flight(conn: db.Connection) -> int:
    row = conn.execute(IN_FLIGHT).fetchone()
    assert row is not None
    return int(row["n"])


def kill_with_events_in_flight(conn: db.Connection, process: Any) -> None:
    """Kill the stack at a moment when the queue holds events not yet on the bus (what used to
    be lost), not at a fixed time: on a loaded machine the relay may not have run by then."""
    time.sleep(LOAD_SECONDS)
    deadline = time.monotonic() + CATCH_SECONDS
    while in_flight(conn) == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.killpg(process.pid, signal.SIGKILL)  # the stack and everything it started
    process.wait(timeout=30)


def received(tap: str, seen: list[dict[str, Any]]) -> None:
    sqs = boto3.client("sqs")
    while messages := sqs.receive_message(QueueUrl=tap, MaxNumberOfMessages=10).get("Messages"):
        seen += [json.loads(m["Body"])["detail"] for m in messages]
        handles: list[DeleteMessageBatchRequestEntryTypeDef] = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
        ]
        sqs.delete_message_batch(QueueUrl=tap, Entries=handles)


def test_kill_9_mid_load_loses_no_committed_event(
    crash_database: str, crash_tap: str, aws_stand_in: str, tmp_path: Path
) -> None:
    on_the_bus: list[dict[str, Any]] = []
    in_flight_at_a_crash = 0
    with db.connect(crash_database) as conn:
        for _ in range(CRASHES):
            base, process = start(crash_database, tmp_path, aws_stand_in)
            stop = threading.Event()
            load(base, stop)
            kill_with_events_in_flight(conn, process)
            stop.set()
            # Accepted by the queue that just died, not yet on the bus: what used to be lost.
            in_flight_at_a_crash += in_flight(conn)
            base, process = start(crash_database, tmp_path, aws_stand_in)
            restarted = time.monotonic()
            try:
                wanted = committed(conn)
                assert wanted, "the load wrote nothing before the crash"
                while time.monotonic() - restarted < DELIVERY_SECONDS:
                    received(crash_tap, on_the_bus)
                    if set(wanted) <= {e["id"] for e in on_the_bus}:
                        break
                    time.sleep(0.5)
                missing = set(wanted) - {e["id"] for e in on_the_bus}
                assert not missing, f"{len(missing)} of {len(wanted)} never reached the bus"
            finally:
                stop_stack(process)
    assert in_flight_at_a_crash > 0, "no crash caught an event between queue and bus"
    first_seen: dict[str, list[int]] = {}
    for event in on_the_bus:
        versions = first_seen.setdefault(event["job_id"], [])
        if event["version"] not in versions:
            versions.append(event["version"])
    for job_id, versions in first_seen.items():
        assert versions == sorted(versions), f"job {job_id} reached the bus out of order"
