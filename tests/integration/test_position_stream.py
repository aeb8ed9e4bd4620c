"""Positions with no Lambda per report (issue 37), in process: the local stand-in of API
Gateway's service integration and of Lambda's Kinesis event source mapping
(dispatch_local.streams), held to what the template says; PositionsFunction on the stand-in's
batches, against the real Redis; the local WebSocket API sending a message by its `action`,
over a real socket. Through the whole local stack: tests/e2e/test_positions_ws.py."""

import base64
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import uvicorn
from starlette.applications import Starlette

from dispatch import db
from dispatch.config import settings
from dispatch.errors import CacheUnavailable
from dispatch.workers import locations
from dispatch_local import tokens
from dispatch_local.events import LambdaContext
from dispatch_local.gateway import consume_stream
from dispatch_local.stack import free_port
from dispatch_local.streams import BAD_BODY, Record, StreamStandIn, stand_ins
from dispatch_local.template import (
    Function,
    StreamConsumer,
    handler_of,
    load_template,
    stream_consumers,
    websocket_api,
)
from dispatch_local.websocket import LocalWebSocketApi
from tests.push_client import Listener, until
from tests.support import run_async

ROUTE = "position"


def stand_in() -> StreamStandIn:
    """The position route's stand-in, as the local stack makes it."""
    return stand_ins(websocket_api(), stream_consumers())[ROUTE]


def position(lat: float, lng: float) -> str:
    return json.dumps({"action": ROUTE, "lat": lat, "lng": lng})


def who(sub: str, roles: str = "worker") -> dict[str, Any]:
    """The connection's authorizer as the local WebSocket API keeps it: the principal and the
    authorizer's context."""
    return {"principalId": sub, "sub": sub, "roles": roles, "expires_at": 2_000_000_000}


def consumer() -> StreamConsumer:
    (found,) = (c for c in stream_consumers() if c.function == "PositionsFunction")
    return found


def write(event: dict[str, Any]) -> Any:
    """PositionsFunction's handler, as Lambda invokes it with a batch."""
    return handler_of(consumer())(event, LambdaContext(function_name="PositionsFunction"))


def ids(prefix: str, n: int) -> list[str]:
    suffix = uuid.uuid4().hex[:8]
    return [f"{prefix}-{i}-{suffix}" for i in range(n)]


# -- the stand-in is what the template says ------------------------------------------------------


def test_the_stand_in_does_what_the_template_s_integration_and_mapping_say() -> None:
    resources = load_template()["Resources"]
    api = resources["PushApi"]["Properties"]
    assert api["RouteSelectionExpression"] == "$request.body.action"  # action_of reads that
    route = resources["PositionRoute"]["Properties"]
    assert route["RouteKey"] == ROUTE
    assert route["ModelSelectionExpression"] == "$request.body.action"
    assert route["RequestModels"] == {ROUTE: "PositionModel"}
    integration = resources["PositionIntegration"]["Properties"]
    assert integration["IntegrationType"] == "AWS"
    assert integration["IntegrationUri"]["Sub"].endswith(":kinesis:action/PutRecord")
    # The mapping template, word for word what StreamStandIn.put emulates: the record's data
    # is the message as sent, its partition key `<roles>|<principalId>`, its stream the one
    # the consumer reads.
    assert json.loads(integration["RequestTemplates"]["$default"]["Sub"]) == {
        "StreamName": "${PositionStream}",
        "Data": "$util.base64Encode($input.body)",
        "PartitionKey": "$context.authorizer.roles|$context.authorizer.principalId",
    }
    assert resources["PositionStream"]["Type"] == "AWS::Kinesis::Stream"
    standing = stand_in()
    assert standing.route.request_template == integration["RequestTemplates"]["$default"]["Sub"]
    assert standing.route.stream == "PositionStream" == standing.consumer.stream
    assert standing.arn.endswith(":stream/PositionStream")
    # The model it validates with is the template's PositionModel, as draft 4.
    model = next(
        r["Properties"]["Schema"]
        for r in resources.values()
        if r["Type"] == "AWS::ApiGatewayV2::Model" and r["Properties"]["Name"] == "PositionModel"
    )
    assert standing.validator.schema == model
    assert model["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert type(standing.validator).__name__ == "Draft4Validator"
    # Its batches are the event source mapping's.
    mapping = resources["PositionsFunction"]["Properties"]["Events"]["Positions"]["Properties"]
    assert mapping["Stream"] == {"GetAtt": "PositionStream.Arn"}
    assert (
        standing.consumer.batch_size,
        standing.consumer.window_seconds,
        standing.consumer.retries,
        standing.consumer.max_age_seconds,
    ) == (
        mapping["BatchSize"],
        mapping["MaximumBatchingWindowInSeconds"],
        mapping["MaximumRetryAttempts"],
        mapping["MaximumRecordAgeInSeconds"],
    )
    assert standing.consumer.function == "PositionsFunction"


def test_a_stream_route_nobody_consumes_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="no function consumes PositionStream"):
        stand_ins(websocket_api(), [])


# -- what it lets on the stream ----------------------------------------------------------------

DEEP = '{"action": "position", "lat": 1, "lng": 2, "x": ' + "[" * 100_000 + "]" * 100_000 + "}"


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "",
        '[{"action": "position", "lat": 12.97, "lng": 77.59}]',  # a JSON array
        '"position"',
        '{"action": "position", "lng": 77.59}',  # no lat
        '{"action": "position", "lat": 12.97}',  # no lng
        '{"lat": 12.97, "lng": 77.59}',  # no action
        position(86, 77.59),
        position(-85.06, 77.59),
        position(12.97, 181),
        position(12.97, -180.5),
        '{"action": "position", "lat": "12.97", "lng": 77.59}',  # a string number
        '{"action": "position", "lat": 12.97, "lng": null}',
        '{"action": "position", "lat": true, "lng": 77.59}',
        '{"action": "position", "lat": 12.97, "lng": 77.59, "speed": 3}',  # an extra field
        '{"action": "locate", "lat": 12.97, "lng": 77.59}',  # another action
        '{"action": "Position", "lat": 12.97, "lng": 77.59}',
        pytest.param(DEEP, id="nested past what the parser takes"),
    ],
)
def test_a_body_the_model_refuses_goes_no_further(body: str) -> None:
    standing = stand_in()
    assert standing.put(body, who("w-1")) == BAD_BODY == "Bad request body"
    assert (standing.refused, standing.put_count) == (1, 0)
    assert not standing.ready(now=time.time() + 3600) and standing.take() == []


@pytest.mark.parametrize(
    "body",
    [
        position(12.9716, 77.5946),
        '{"action":"position","lat":0,"lng":0}',  # integers are numbers
        position(85.05112878, 180),
        position(-85.05112878, -180),
        '{ "lng" : -0.1276,\n "lat": 51.5072, "action": "position" }',  # any order, any space
    ],
)
def test_a_good_body_becomes_a_record_as_sent_keyed_by_who_sent_it(body: str) -> None:
    standing = stand_in()
    before = time.time()
    assert standing.put(body, who("w-1", "worker")) is None
    (record,) = standing.take()
    assert record.data == body.encode()  # $util.base64Encode($input.body): the bytes as sent
    assert record.partition_key == "worker|w-1"
    assert before <= record.arrived <= time.time()
    (event,) = standing.event([record])["Records"]
    assert base64.b64decode(event["kinesis"]["data"]) == body.encode()
    assert event["kinesis"]["partitionKey"] == "worker|w-1"
    assert (event["eventSource"], event["eventSourceARN"]) == ("aws:kinesis", standing.arn)


def test_records_come_in_arrival_order_in_batches_of_the_mapping_s_size() -> None:
    standing = stand_in()
    sent = [position(10 + n / 10_000, 20) for n in range(2_500)]
    for n, body in enumerate(sent):
        assert standing.put(body, who(f"w-{n % 7}")) is None
    assert standing.ready()  # a full batch is due at once, its window or not
    batches = [standing.take() for _ in range(4)]
    assert [len(batch) for batch in batches] == [1000, 1000, 500, 0]
    taken = [record for batch in batches for record in batch]
    assert [record.data.decode() for record in taken] == sent
    sequences = [record.sequence for record in taken]
    assert sequences == sorted(sequences) and len(set(sequences)) == len(sequences)
    event = standing.event(batches[0])["Records"]
    assert [base64.b64decode(r["kinesis"]["data"]).decode() for r in event] == sent[:1000]


def test_a_batch_short_of_full_is_due_when_its_oldest_has_waited_the_window() -> None:
    standing = stand_in()
    before = time.time()
    standing.put(position(1, 2), who("w-1"))
    standing.put(position(1, 3), who("w-1"))
    after = time.time()
    assert standing.consumer.window_seconds == 1
    assert not standing.ready(now=before + 0.5)
    assert standing.ready(now=after + 1)


def test_records_past_the_maximum_age_are_dropped_unread() -> None:
    standing = stand_in()
    standing.put(position(1, 2), who("w-1"))
    standing.put(position(1, 3), who("w-2"))
    assert standing.take(now=time.time() + standing.consumer.max_age_seconds + 1) == []
    assert standing.take() == []  # gone, not left for later
    standing.put(position(1, 4), who("w-3"))
    assert [r.partition_key for r in standing.take()] == ["worker|w-3"]


# -- PositionsFunction on its batches (the real Redis) ---------------------------------------


def test_a_batch_of_workers_positions_lands_in_redis(cache: redis.Redis) -> None:
    standing = stand_in()
    workers = ids("w-batch", 3)
    where = {w: (12.9 + n / 100, 77.5 + n / 100) for n, w in enumerate(workers)}
    for w in workers:
        assert standing.put(position(*where[w]), who(w)) is None
    assert write(standing.event(standing.take())) == {"written": 3, "dropped": 0}
    assert locations.fresh_positions(workers) == where


def test_a_business_s_record_and_malformed_ones_are_dropped_and_counted(
    cache: redis.Redis,
) -> None:
    standing = stand_in()
    worker, business, ops, other = ids("who", 4)
    standing.put(position(12.97, 77.59), who(worker))
    standing.put(position(12.98, 77.59), who(business, "business"))
    standing.put(position(12.99, 77.59), who(ops, "ops"))
    batch = standing.take()
    # Records put on the stream by other means than the route (its model lets none through).
    now = time.time()
    batch += [
        Record(b"not json", f"worker|{other}", now, 901),
        Record(b'{"action": "position", "lat": "1", "lng": 2}', f"worker|{other}", now, 902),
        Record(b'{"action": "position", "lat": 86, "lng": 2}', f"worker|{other}", now, 903),
        Record(position(1, 2).encode(), f"{other}", now, 904),  # no roles
        Record(position(1, 2).encode(), "worker|", now, 905),  # nobody
    ]
    assert write(standing.event(batch)) == {"written": 1, "dropped": 7}
    assert locations.fresh_positions([worker, business, ops, other]) == {worker: (12.97, 77.59)}


def test_several_reports_of_one_worker_in_a_batch_keep_the_latest(cache: redis.Redis) -> None:
    standing = stand_in()
    (worker,) = ids("w-moving", 1)
    path = [(12.5 + n / 10, 77.59) for n in range(5)]  # a cell apart each
    for lat, lng in path:
        standing.put(position(lat, lng), who(worker))
    assert write(standing.event(standing.take())) == {"written": 1, "dropped": 0}
    assert locations.fresh_positions([worker]) == {worker: path[-1]}
    assert [w for w, _ in locations.fresh_nearby(*path[-1], 1000, 10)] == [worker]
    assert all(locations.fresh_nearby(*where, 1000, 10) == [] for where in path[:-1])


def test_a_full_batch_of_a_thousand_lands_whole(cache: redis.Redis) -> None:
    standing = stand_in()
    workers = ids("w-many", 1000)
    # Spread over cells (and so over the cluster's masters in the AWS-path tier).
    where = {w: (-40 + n * 0.08, -120 + n * 0.2) for n, w in enumerate(workers)}
    for w in workers:
        standing.put(position(*where[w]), who(w))
    batch = standing.take()
    assert len(batch) == 1000
    assert write(standing.event(batch)) == {"written": 1000, "dropped": 0}
    assert locations.fresh_positions(workers) == where


@pytest.fixture
def redis_out_of_reach(cache: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")  # nothing listens there
    settings.cache_clear()
    locations.client.cache_clear()
    yield
    monkeypatch.undo()
    settings.cache_clear()
    locations.client.cache_clear()


def test_with_redis_out_of_reach_the_batch_fails_so_that_it_is_retried(
    redis_out_of_reach: None,
) -> None:
    standing = stand_in()
    standing.put(position(12.97, 77.59), who("w-unwritten"))
    with pytest.raises(CacheUnavailable):
        write(standing.event(standing.take()))


def test_a_failing_batch_is_tried_the_mapping_s_retries_more_then_skipped(
    redis_out_of_reach: None, capsys: pytest.CaptureFixture[str]
) -> None:
    standing = stand_in()
    standing.put(position(12.97, 77.59), who("w-skipped"))
    tries: list[dict[str, Any]] = []

    def handle(event: dict[str, Any]) -> Any:
        tries.append(event)
        return write(event)

    assert consume_stream(standing, handle, now=window_past(standing)) == 1
    assert len(tries) == 1 + standing.consumer.retries == 3
    assert all(event == tries[0] for event in tries)  # the same batch each time
    logged = capsys.readouterr().out
    assert "PositionsFunction: a batch of 1 records skipped after 3 tries" in logged
    assert standing.take() == []  # skipped, not left on the stream


def test_a_batch_that_fails_once_is_written_when_tried_again(cache: redis.Redis) -> None:
    standing = stand_in()
    (worker,) = ids("w-retried", 1)
    standing.put(position(12.97, 77.59), who(worker))
    tries: list[dict[str, Any]] = []

    def handle(event: dict[str, Any]) -> Any:
        tries.append(event)
        if len(tries) == 1:
            raise RuntimeError("the execution environment died")
        return write(event)

    assert consume_stream(standing, handle, now=window_past(standing)) == 1
    assert len(tries) == 2
    assert locations.fresh_positions([worker]) == {worker: (12.97, 77.59)}


def test_nothing_is_handed_over_before_a_batch_is_due(cache: redis.Redis) -> None:
    standing = stand_in()
    handed: list[dict[str, Any]] = []
    assert consume_stream(standing, handed.append) == 0  # an empty stream
    for n in range(standing.consumer.batch_size):
        standing.put(position(1, n / 1000), who(f"w-{n}"))
    assert consume_stream(standing, handed.append) == 1000  # full: due before its window
    assert len(handed[0]["Records"]) == 1000


def test_a_batch_comes_due_when_its_oldest_record_has_waited_the_window(
    cache: redis.Redis,
) -> None:
    standing = stand_in()
    handed: list[dict[str, Any]] = []
    standing.put(position(12.97, 77.59), who("w-waiting"))
    arrived = standing.records[0].arrived
    window = standing.consumer.window_seconds
    assert consume_stream(standing, handed.append, now=arrived + window - 0.01) == 0
    assert consume_stream(standing, handed.append, now=arrived + window) == 1
    assert len(handed) == 1


def window_past(standing: StreamStandIn) -> float:
    """A moment when the stand-in's batch is due: its oldest record has waited the window."""
    return standing.records[0].arrived + standing.consumer.window_seconds


# -- the local WebSocket API sends a message by its action (a real socket) --------------------

SECRET = "position-test-secret-" + "x" * 32
DONE = '{"action": "done"}'  # the last message a test sends: $default's, once handled


@dataclass
class SocketApi:
    url: str
    stand_in: StreamStandIn
    invoked: list[tuple[str, str | None, str]]  # route key, body, connection id

    def handled(self, route_key: str, body: str | None = None) -> bool:
        return any(k == route_key and (body is None or b == body) for k, b, _ in self.invoked)


# The local stack's choice of implementation (dispatch_local.cli), and its warning.
WEBSOCKETS_DEPRECATED = "ignore:The `websockets` implementation is deprecated"


@pytest.fixture
def socket_api(conn: db.Connection, configure: Callable[..., None]) -> Iterator[SocketApi]:
    """The local WebSocket API on a port of its own with the position route's stand-in; its
    functions (the real authorizer and push routes) run in its thread, and what each route was
    handed is kept."""
    configure(JWT_ISSUER=tokens.ISSUER, JWT_AUDIENCE=tokens.AUDIENCE, DISPATCH_JWT_SECRET=SECRET)
    api = websocket_api()
    assert api is not None
    found = SocketApi("", stand_ins(api, stream_consumers())[ROUTE], [])

    async def invoke(function: Function, event: dict[str, Any]) -> Any:
        context = event["requestContext"]
        if function != api.authorizer:
            found.invoked.append((context["routeKey"], event.get("body"), context["connectionId"]))
        return handler_of(function)(event, LambdaContext(function_name=function.function))

    local = LocalWebSocketApi(api, invoke, {ROUTE: found.stand_in})
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            Starlette(routes=local.routes()),
            host="127.0.0.1",
            port=port,
            ws="websockets",  # the local stack's (dispatch_local.cli)
            log_level="warning",
            lifespan="off",
        )
    )

    def serve() -> None:
        try:
            server.run()
        finally:
            db.close()  # this thread's connection ($connect, $disconnect)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the socket did not listen"
        time.sleep(0.02)
    found.url = f"http://127.0.0.1:{port}"
    yield found
    server.should_exit = True
    thread.join(timeout=30)


@pytest.mark.filterwarnings(WEBSOCKETS_DEPRECATED)
def test_a_position_goes_on_the_stream_a_refused_one_is_answered_the_rest_go_to_default(
    socket_api: SocketApi,
) -> None:
    sub = f"w-socket-{uuid.uuid4().hex[:8]}"
    good, bad = position(12.97, 77.59), position(86, 77.59)
    others = [
        "hello",
        "[1, 2]",
        '{"action": "ping"}',
        '{"action": "Position", "lat": 12.97, "lng": 77.59}',  # route keys are exact
        '{"lat": 12.97, "lng": 77.59}',
        '{"action": 5, "lat": 12.97, "lng": 77.59}',
        DEEP,
    ]

    async def run() -> Listener:
        phone = await Listener(sub, "worker").open(socket_api.url)
        for body in [good, *others[:3], bad, *others[3:], DONE]:
            await phone.socket.send(body)
        assert await until(lambda: socket_api.handled("$default", DONE) and bool(phone.heard))
        await phone.close()
        assert await until(lambda: socket_api.handled("$disconnect"))
        return phone

    phone = run_async(run())
    (connection_id,) = {c for _, _, c in socket_api.invoked}
    assert [k for k, _, _ in socket_api.invoked] == [
        "$connect",
        *["$default"] * (len(others) + 1),
        "$disconnect",
    ]
    assert [b for k, b, _ in socket_api.invoked if k == "$default"] == [*others, DONE]
    # The refusal: API Gateway's own body, to the sender alone; the good one gets no answer.
    (refusal,) = phone.heard
    assert set(refusal) == {"message", "connectionId", "requestId"}
    assert (refusal["message"], refusal["connectionId"]) == ("Bad request body", connection_id)
    assert refusal["requestId"]
    (record,) = socket_api.stand_in.take()  # put before $default was handed DONE
    assert (record.data, record.partition_key) == (good.encode(), f"worker|{sub}")
    assert socket_api.stand_in.refused == 1


@pytest.mark.filterwarnings(WEBSOCKETS_DEPRECATED)
def test_the_partition_key_is_who_sent_it_whatever_their_role(socket_api: SocketApi) -> None:
    """API Gateway puts anyone's position on the stream (the model knows no roles); the
    consumer drops what is not a worker's (test_a_business_s_record_and_malformed_...)."""
    sub = f"b-socket-{uuid.uuid4().hex[:8]}"

    async def run() -> None:
        phone = await Listener(sub, "business").open(socket_api.url)
        await phone.socket.send(position(12.97, 77.59))
        await phone.socket.send(DONE)
        assert await until(lambda: socket_api.handled("$default", DONE))
        await phone.close()
        assert phone.heard == []

    run_async(run())
    (record,) = socket_api.stand_in.take()  # put before $default was handed DONE
    assert record.partition_key == f"business|{sub}"
