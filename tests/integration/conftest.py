"""Fixtures for the AWS side of delivery (the queues on moto, a tap on the bus), a stand-in
for the offer queue and the bus when only the waves are under test, and settings per test."""

import json
import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import boto3
import psycopg
import pytest
import redis
from botocore.exceptions import ClientError

from dispatch import db
from dispatch.config import settings
from dispatch.events import Event
from dispatch.jobs.models import JobEventType
from dispatch.offers import waves as offer_waves
from dispatch.outbox import publisher
from dispatch_local.embedded import outbox_dlq_name
from tests.conftest import create_database
from tests.support import on_the_queue

# History for the integration tier (issue 35): days of the seed's load, small per day, so that
# a statement that reads all of history shows it here, not in production.
HISTORY_JOBS_PER_DAY = 1_000
HISTORY_DAYS = (1, 6)

JOB_EVENT_TYPES = frozenset(t.value for t in JobEventType)


@pytest.fixture(scope="session")
def histories(admin_url: str) -> Iterator[dict[int, str]]:
    """Databases with 1 and 6 days of history behind the same current state (bench.history_load:
    every row through the schema's constraints and triggers), by days; dropped after."""
    from bench import history_load

    urls = {days: create_database(admin_url) for days in HISTORY_DAYS}
    try:
        for days, url in urls.items():
            history_load.load(url, days, HISTORY_JOBS_PER_DAY)
        yield urls
    finally:
        # Dropped without the per-event contract check of drop_database: the loader's events
        # are checked at one day by tests/bench/test_history_bench.py.
        with psycopg.connect(admin_url, autocommit=True) as conn:
            for url in urls.values():
                name = psycopg.conninfo.conninfo_to_dict(url)["dbname"]
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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
        emptied(sqs, url)
    return {"outbox": outbox, "dlq": dlq, "offers": offers, "tap": tap}


def emptied(sqs: Any, url: str) -> None:
    """Whatever earlier tests left on a queue, gone. Purged: the tiers before this one leave
    thousands of messages on the session's queues, and moto looks through all of a queue's
    messages on every receive, so taking them off ten at a time grows with their square
    (measured here: 1,000 messages 44 s, 2,000 186 s; this fixture's first use took 185 s, past
    the suite's timeout on CI's slower machine). PurgeQueue allows one a minute; within it,
    what came since is few enough to take off."""
    try:
        sqs.purge_queue(QueueUrl=url)
    except ClientError as error:
        if "PurgeQueueInProgress" not in error.response["Error"]["Code"]:
            raise
        on_the_queue(url)


class Waves:
    """Stands in for the offer queue and the bus: what was scheduled, and the round's events
    (offer_events') the outbox publisher put on the bus after each wave, in its order."""

    def __init__(self) -> None:
        self.scheduled: list[tuple[offer_waves.WaveRequest, int]] = []
        self.put: list[Event] = []

    def schedule(self, request: offer_waves.WaveRequest, delay_seconds: int) -> None:
        self.scheduled.append((request, delay_seconds))

    def put_all(self, events: Sequence[Event]) -> None:
        self.put.extend(e for e in events if e.type not in JOB_EVENT_TYPES)

    def run(self, conn: db.Connection, request: offer_waves.WaveRequest) -> offer_waves.WaveReport:
        report = offer_waves.run_wave(conn, request, self.schedule)
        # What the publisher does with the message the wave's relay sent (the job's own
        # earlier events first: they are before the round's in the job's order).
        publisher.publish_up_to(conn, {request.job_id: request.version}, self.put_all)
        return report

    def offered(self) -> list[str]:
        return [e.data["worker_id"] for e in self.put if e.type == "offer.created"]


@pytest.fixture
def waves(cache: redis.Redis) -> Waves:
    return Waves()


@pytest.fixture
def configure(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    def configure(**environment: str) -> None:
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        settings.cache_clear()

    yield configure
    monkeypatch.undo()
    settings.cache_clear()
