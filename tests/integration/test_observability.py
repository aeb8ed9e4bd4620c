"""Logs carry the request id as correlation id; accept outcomes are counted as metrics."""

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dispatch.http.resolver import DispatchResolver, entrypoint
from dispatch.observability import logger
from dispatch_local.events import LambdaContext
from tests.support import Api, drain, make_job, make_worker, worker


def emitted(capfd: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    lines = capfd.readouterr().out.splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def metric_values(records: list[dict[str, Any]], name: str) -> list[Any]:
    return [r[name] for r in records if "_aws" in r and name in r]


def test_accepts_won_and_lost_are_counted(api: Api, capfd: pytest.CaptureFixture[str]) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    capfd.readouterr()
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}, key="lost-1")
    api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}, key="lost-1")  # a replay
    records = emitted(capfd)
    assert metric_values(records, "AcceptsWon") == [[1.0]]
    assert metric_values(records, "AcceptsLost") == [[1.0]]  # the replay is not counted again
    namespaces = {
        m["Namespace"] for r in records if "_aws" in r for m in r["_aws"]["CloudWatchMetrics"]
    }
    assert namespaces == {"Dispatch"}


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What the Powertools logger writes (its handler bound stdout when first imported)."""
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield stream
    handler.setStream(previous)


def test_an_unexpected_failure_is_logged_correlated_and_not_leaked(
    log_lines: io.StringIO,
) -> None:
    app = DispatchResolver()

    @app.endpoint("GET", "/boom", roles=None, operation_id="boom")
    def boom() -> None:
        raise RuntimeError("secret internals: password=hunter2")

    event = {
        "version": "2.0",
        "routeKey": "GET /boom",
        "rawPath": "/boom",
        "rawQueryString": "",
        "headers": {},
        "requestContext": {
            "http": {"method": "GET", "path": "/boom", "sourceIp": "127.0.0.1"},
            "requestId": "req-boom-1",
            "routeKey": "GET /boom",
            "stage": "$default",
        },
        "isBase64Encoded": False,
    }
    # Called as the local stack calls a handler (handler_of), with its stand-in context.
    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = entrypoint(app)
    result = handler(event, LambdaContext(function_name="Boom"))
    assert result["statusCode"] == 500
    body = json.loads(result["body"])
    assert body["error"]["code"] == "INTERNAL"
    assert body["error"]["request_id"] == "req-boom-1"
    assert "hunter2" not in result["body"]
    records = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    logs = [r for r in records if r.get("message") == "unexpected error"]
    assert len(logs) == 1
    assert logs[0]["correlation_id"] == "req-boom-1"
    assert "hunter2" in logs[0]["exception"]  # the operator, not the caller, sees the cause


def test_the_sweeper_reports_reopened_leases_and_the_relay_its_events_and_lag(
    api: Api, queues: dict[str, str], capfd: pytest.CaptureFixture[str]
) -> None:
    from dispatch_local.template import handler_of, schedules

    named = {s.function: s for s in schedules()}
    sweeper, relay = named["LeaseSweeperFunction"], named["OutboxRelayFunction"]
    make_job(api)  # its event is relayed at once
    drain(queues["outbox"])  # and published: nothing lags
    capfd.readouterr()
    for scheduled in (sweeper, relay):
        handler_of(scheduled)(
            {}, LambdaContext(function_name=scheduled.function, timeout_seconds=60)
        )
    records = emitted(capfd)
    assert metric_values(records, "LeasesReopened") == [[0.0]]
    assert metric_values(records, "EventsRelayed") == [[0.0]]
    (lag,) = metric_values(records, "RelayLagSeconds")
    assert lag == [0.0]


def test_a_wave_without_redis_says_why_counts_it_and_an_alarm_watches(
    api: Api,
    queues: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    log_lines: io.StringIO,
) -> None:
    """Found from outside: with Redis down, offer waves failed in silence (their messages
    waited for redelivery, and nothing said why)."""
    import boto3
    from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError

    from dispatch.config import settings
    from dispatch.offers.models import WaveRequest
    from dispatch.workers import locations
    from dispatch_local.gateway import sqs_record
    from dispatch_local.template import load_template
    from tests.support import consumer_of

    job = make_job(api)
    sqs = boto3.client("sqs")
    request = WaveRequest(job_id=job["id"], version=1, wave=1)
    sqs.send_message(QueueUrl=queues["offers"], MessageBody=request.model_dump_json())
    (message,) = sqs.receive_message(QueueUrl=queues["offers"], AttributeNames=["All"])["Messages"]
    arn = sqs.get_queue_attributes(QueueUrl=queues["offers"], AttributeNames=["QueueArn"])
    event = {"Records": [sqs_record(message, arn["Attributes"]["QueueArn"])]}
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens there
    settings.cache_clear()
    locations.client.cache_clear()
    capfd.readouterr()
    try:
        # Every message of the batch failed: the invocation fails (Lambda's Errors metric),
        # and the queue delivers them again after the visibility timeout.
        with pytest.raises(BatchProcessingError, match="All records failed"):
            consumer_of("OfferQueue")(event)
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        locations.client.cache_clear()
    logs = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    (said,) = [r for r in logs if str(r.get("message", "")).startswith("offer wave failed")]
    assert "Redis" in said["message"] and said["level"] == "WARNING"
    assert (said["job_id"], said["version"], said["wave"]) == (job["id"], 1, 1)
    assert said["message_id"] == message["MessageId"]
    (returned,) = [
        r for r in logs if r.get("message") == "message failed; it goes back to the queue"
    ]
    assert "CacheUnavailable" in returned["exception"]
    records = emitted(capfd)
    assert metric_values(records, "OfferWavesWithoutPositions") == [[1.0]]
    assert metric_values(records, "MessagesFailed") == [[1.0]]

    # The alarm that watches it, and says why it fires.
    resources = load_template()["Resources"]
    (alarm,) = [
        r["Properties"]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        and r["Properties"].get("MetricName") == "OfferWavesWithoutPositions"
    ]
    assert alarm["Namespace"] == "Dispatch"
    assert alarm["Dimensions"] == [{"Name": "service", "Value": "dispatch"}]
    assert "Redis" in alarm["AlarmDescription"]
