"""Push (issue 23), in process against the real Postgres: the $connect authorizer, the
connection store and its guards, who hears what, and the sender forgetting gone connections
and closing expired ones. Over real sockets: tests/e2e/test_push_ws.py."""

import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import jwt
import psycopg
import pytest

from dispatch import db
from dispatch.events import Event
from dispatch.outbox import publisher
from dispatch.push import connections, delivery
from dispatch.push import sql as push_sql
from dispatch.workers import locations
from dispatch.workers.models import WorkerPosition
from dispatch_local import tokens
from dispatch_local.events import LambdaContext
from dispatch_local.template import handler_of, websocket_api
from tests.support import BUSINESS, Api, make_job, make_worker, step, worker

SECRET = "push-test-secret-" + "x" * 32


@pytest.fixture
def push_settings(configure: Callable[..., None], database_url: str) -> None:
    """The authorizer's settings as the local stack gives them (its cold start reads every
    setting, the database's too)."""
    configure(JWT_ISSUER=tokens.ISSUER, JWT_AUDIENCE=tokens.AUDIENCE, DISPATCH_JWT_SECRET=SECRET)


def token(sub: str, role: str, ttl_seconds: int = 3600, **claims: Any) -> str:
    now = int(datetime.now(UTC).timestamp())
    body = {
        "sub": sub,
        "cognito:groups": [role],
        "iss": tokens.ISSUER,
        "aud": tokens.AUDIENCE,
        "iat": now,
        "exp": now + ttl_seconds,
        **claims,
    }
    return jwt.encode(body, claims.pop("key", SECRET), algorithm="HS256")


def authorize(query: dict[str, str] | None) -> Any:
    api = websocket_api()
    assert api is not None and api.authorizer is not None
    event = {
        "type": "REQUEST",
        "methodArn": "arn:aws:execute-api:us-east-1:1:api/dev/$connect",
        "queryStringParameters": query,
        "requestContext": {"routeKey": "$connect", "connectionId": "c1", "requestId": "r"},
    }
    return handler_of(api.authorizer)(event, LambdaContext(function_name="authorizer"))


def route(route_key: str, connection_id: str, authorizer: dict[str, Any] | None = None) -> Any:
    api = websocket_api()
    assert api is not None
    event = {
        "requestContext": {
            "routeKey": route_key,
            "connectionId": connection_id,
            "requestId": str(uuid.uuid4()),
            "authorizer": authorizer or {},
        }
    }
    return handler_of(api.routes[route_key])(event, LambdaContext(function_name="push"))


# -- the handshake ----------------------------------------------------------------------------


def test_a_good_token_is_allowed_with_who_it_proves(push_settings: None) -> None:
    answer = authorize({"token": token("worker-7", "worker", ttl_seconds=600)})
    assert answer["principalId"] == "worker-7"
    assert answer["policyDocument"]["Statement"][0]["Effect"] == "Allow"
    assert answer["context"]["sub"] == "worker-7"
    assert answer["context"]["roles"] == "worker"
    assert answer["context"]["expires_at"] > datetime.now(UTC).timestamp() + 500


@pytest.mark.parametrize(
    "query",
    [
        None,
        {},
        {"token": ""},
        {"token": "not-a-jwt"},
        {"token": token("worker-1", "worker", ttl_seconds=-10)},  # expired
        {"token": token("worker-1", "worker", key="another-secret-" + "y" * 32)},
        {"token": token("worker-1", "worker", iss="https://elsewhere.example")},
        {"token": token("worker-1", "worker", aud="another-client")},
        {"token": token("worker-1", "admin")},  # no role the API knows
        {"token": token("", "worker")},
    ],
)
def test_a_bad_token_is_refused_with_unauthorized(
    push_settings: None, query: dict[str, str] | None
) -> None:
    with pytest.raises(Exception, match="Unauthorized"):
        authorize(query)


def test_connect_stores_the_caller_until_its_token_expires_and_disconnect_forgets(
    conn: db.Connection, push_settings: None
) -> None:
    soon = int((datetime.now(UTC) + timedelta(minutes=5)).timestamp())
    later = int((datetime.now(UTC) + timedelta(hours=12)).timestamp())
    assert route("$connect", "short", {"sub": "w1", "roles": "worker", "expires_at": soon}) == {
        "statusCode": 200
    }
    route("$connect", "long", {"sub": "o1", "roles": "ops", "expires_at": str(later)})
    rows = {
        r["connection_id"]: r
        for r in conn.execute("SELECT *, expires_at - connected_at AS lasts FROM push_connections")
    }
    assert rows["short"]["expires_at"] == datetime.fromtimestamp(soon, UTC)
    assert rows["short"]["roles"] == ["worker"]
    assert rows["long"]["lasts"] <= timedelta(hours=2)  # API Gateway's limit, not the token's
    assert route("$default", "short") == {"statusCode": 200}
    route("$disconnect", "short")
    left = [r["connection_id"] for r in conn.execute("SELECT connection_id FROM push_connections")]
    assert left == ["long"]


def test_a_workers_last_socket_closing_takes_it_off_the_map(
    conn: db.Connection, push_settings: None, cache: Any
) -> None:
    """The contract's 1.3: a worker's position lasts while one of its sockets is open; the
    last one's $disconnect forgets it (off the map until its next report), also when the
    expiry sweep forgot the connection first. A business's disconnect forgets nothing, one of
    two devices closing keeps the position, and a report sent before the close that arrives
    after it (the stream's batching) does not bring the worker back."""
    soon = int((datetime.now(UTC) + timedelta(minutes=30)).timestamp())
    worker_1 = {"sub": "w1", "roles": "worker", "expires_at": soon}
    business_1 = {"sub": "b1", "roles": "business", "expires_at": soon}
    route("$connect", "phone", worker_1)
    route("$connect", "tablet", worker_1)
    route("$connect", "desk", business_1)
    here = WorkerPosition(lat=12.97, lng=77.59)
    for who in ("w1", "b1"):  # a business's id with a position: only to show nothing forgets it
        locations.report(who, here)
    route("$disconnect", "tablet", worker_1)
    assert set(locations.fresh_positions(["w1", "b1"])) == {"w1", "b1"}
    route("$disconnect", "desk", business_1)
    sent_before_the_close = time.time()
    route("$disconnect", "phone", worker_1)
    assert set(locations.fresh_positions(["w1", "b1"])) == {"b1"}
    assert [who for who, _ in locations.fresh_nearby(12.97, 77.59, 1_000, 10)] == ["b1"]
    late = locations.Report("w1", here.lat, here.lng, sent_before_the_close)
    assert locations.report_many([late]) == 0  # arrived after the close: not written
    assert set(locations.fresh_positions(["w1"])) == set()
    assert [who for who, _ in locations.fresh_nearby(12.97, 77.59, 1_000, 10)] == ["b1"]
    route("$disconnect", "phone", worker_1)  # API Gateway's retry of it: nothing to forget
    locations.report("w1", here)  # back, by its next report
    assert set(locations.fresh_positions(["w1"])) == {"w1"}
    # A token that ran out: the sweep forgets the connection, then the poster closes it.
    route("$connect", "expiring", worker_1)
    connections.forget(conn, ["expiring"])
    route("$disconnect", "expiring", worker_1)
    assert set(locations.fresh_positions(["w1"])) == set()


# -- the store's guards, with the application bypassed ----------------------------------------

INSERT = "INSERT INTO push_connections (connection_id, caller_id, roles, expires_at) VALUES "


@pytest.mark.parametrize(
    "statement",
    [
        INSERT + "('a', 'w', ARRAY['admin'], now() + interval '1 hour')",
        INSERT + "('a', 'w', ARRAY[]::text[], now() + interval '1 hour')",
        INSERT + "('a', ' ', ARRAY['worker'], now() + interval '1 hour')",
        INSERT + "('a', 'w', ARRAY['worker'], now() + interval '3 hours')",
        INSERT + "('a', 'w', ARRAY['worker'], now() - interval '1 second')",
        INSERT + "('a b/../c', 'w', ARRAY['worker'], now() + interval '1 hour')",
        "UPDATE push_connections SET expires_at = now() + interval '1 hour'",
        "UPDATE push_connections SET roles = ARRAY['ops']",
        "TRUNCATE push_connections",
    ],
)
def test_the_database_refuses_what_no_connection_may_be(
    app_conn: db.Connection, statement: str
) -> None:
    with pytest.raises((psycopg.errors.IntegrityError, psycopg.errors.InsufficientPrivilege)):
        app_conn.execute(statement)


# -- who hears what ---------------------------------------------------------------------------


@pytest.fixture
def connected(conn: db.Connection) -> Callable[[str, str], str]:
    def connect(caller: str, role: str) -> str:
        connection_id = f"{caller}-{uuid.uuid4().hex[:6]}"
        connections.connect(
            conn, connection_id, caller, [role], datetime.now(UTC) + timedelta(hours=1)
        )
        return connection_id

    return connect


def job_events(conn: db.Connection, job_id: str) -> list[Event]:
    rows = conn.execute(
        "SELECT dispatch_event(e) AS document FROM job_events e WHERE job_id = %s ORDER BY version",
        (job_id,),
    ).fetchall()
    return [Event.from_document(row["document"]) for row in rows]


def offer(job: dict[str, Any], worker_id: str) -> Event:
    return Event.from_document(
        {
            "id": str(uuid.uuid4()),
            "job_id": job["id"],
            "type": "offer.created",
            "version": job["version"],
            "actor": "system",
            "occurred_at": datetime.now(UTC).isoformat(),
            "data": {"worker_id": worker_id, "distance_m": 10.0, "wave": 1, "radius_m": 3000},
        }
    )


def test_each_hears_its_own_and_nobody_another_s(
    conn: db.Connection, api: Api, connected: Callable[[str, str], str]
) -> None:
    for n in (1, 2, 3):
        make_worker(api, worker(n))
    mine = make_job(api, BUSINESS)
    theirs = make_job(api, ("business-2", "business"))
    held = api.call("POST", f"/jobs/{mine['id']}/accept", worker(1), {"version": 1}).body
    step(api, held, worker(1), "release")

    ops = connected("ops-1", "ops")
    ops_again = connected("ops-1", "ops")  # a second device of the same person
    owner = connected("business-1", "business")
    other_business = connected("business-2", "business")
    holder = connected("worker-1", "worker")
    offered = connected("worker-2", "worker")
    nobody = connected("worker-3", "worker")

    def heard(event: Event) -> set[str]:
        return {r.connection_id for r in connections.recipients(conn, event)}

    created, assigned, released = job_events(conn, mine["id"])
    assert heard(created) == {ops, ops_again, owner}
    assert heard(assigned) == {ops, ops_again, owner, holder}
    assert heard(released) == {ops, ops_again, owner, holder}  # the event that ends its hold
    assert heard(offer(mine, "worker-2")) == {ops, ops_again, owner, offered}
    (their_created,) = job_events(conn, theirs["id"])
    assert heard(their_created) == {ops, ops_again, other_business}
    assert heard(offer(theirs, "worker-3")) == {ops, ops_again, other_business, nobody}


def test_a_takeover_of_a_lapsed_lease_is_not_heard_by_the_past_holder(
    conn: db.Connection, api: Api, connected: Callable[[str, str], str]
) -> None:
    for n in (1, 2):
        make_worker(api, worker(n))
    job = make_job(api, BUSINESS)
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {"version": 1})
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = %s",
        (job["id"],),
    )
    taken = api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {})
    assert taken.status == 200, taken.body
    past, holder = connected("worker-1", "worker"), connected("worker-2", "worker")
    *_, takeover = job_events(conn, job["id"])
    heard = {r.connection_id for r in connections.recipients(conn, takeover)}
    assert holder in heard and past not in heard  # it names the next holder: never heard


def test_who_hears_an_event_is_read_by_index_at_100k_connections(
    conn: db.Connection, api: Api
) -> None:
    job = make_job(api, BUSINESS)
    conn.execute(
        """INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)
           SELECT 'bulk-' || n, 'worker-bulk-' || n,
                  CASE WHEN n % 1000 = 0 THEN ARRAY['ops'] WHEN n % 10 = 0 THEN ARRAY['business']
                       ELSE ARRAY['worker'] END,
                  now() + interval '1 hour'
             FROM generate_series(1, 100000) n"""
    )
    conn.execute("ANALYZE push_connections")
    (created,) = job_events(conn, job["id"])
    params = {"workers": ["worker-bulk-7"], "job_event": True, "job_id": job["id"], "version": 1}
    plan = "\n".join(
        row["QUERY PLAN"]
        for row in conn.execute("EXPLAIN " + push_sql.RECIPIENTS.sql, params).fetchall()
    )
    assert "Seq Scan on push_connections" not in plan, plan
    heard = {r.connection_id for r in connections.recipients(conn, created)}
    assert len([c for c in heard if c.startswith("bulk-")]) == 100  # the hundred ops


# -- the publisher's hand-off and the sender ----------------------------------------------------


def test_the_publisher_queues_the_deliveries_of_what_it_put(
    conn: db.Connection, api: Api, connected: Callable[[str, str], str], configure: Any
) -> None:
    """Once its events are on the bus, the publisher queues their deliveries itself (no rule,
    push queue and sender between): one message per event, in the job's order, to those who
    may hear it."""
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName=f"push-delivery-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    configure(PUSH_DELIVERY_QUEUE_URL=url)
    ops = connected("ops-1", "ops")
    job = make_job(api, BUSINESS)
    step(api, job, BUSINESS, "cancel")
    put: list[Event] = []
    heads = {uuid.UUID(job["id"]): 2}
    published = publisher.publish_up_to(conn, heads, put.extend, after=delivery.push_published)
    assert [e.type for e in published] == ["job.created", "job.cancelled"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    deliveries = [delivery.Delivery.model_validate_json(m["Body"]) for m in messages]
    assert [(d.post, d.data) for d in deliveries] == [([ops], e.to_json()) for e in published]


def test_push_that_fails_never_fails_the_publish(
    conn: db.Connection, api: Api, connected: Callable[[str, str], str], configure: Any
) -> None:
    """Push is a hint: a delivery queue that refuses leaves the events published and recorded
    so (a retry would put them on the bus again), and is counted."""
    configure(PUSH_DELIVERY_QUEUE_URL="https://sqs.us-east-1.amazonaws.com/123456789012/nowhere")
    connected("ops-1", "ops")
    job = make_job(api, BUSINESS)
    heads = {uuid.UUID(job["id"]): 1}
    put: list[Event] = []
    published = publisher.publish_up_to(conn, heads, put.extend, after=delivery.push_published)
    assert [e.type for e in published] == [e.type for e in put] == ["job.created"]
    left = conn.execute(
        "SELECT count(*) AS n FROM job_events WHERE job_id = %s AND published_at IS NULL",
        [job["id"]],
    ).fetchone()
    assert left is not None and left["n"] == 0


def test_the_sender_queues_deliveries_the_poster_reports_gone_and_the_sender_forgets_them(
    conn: db.Connection, api: Api, connected: Callable[[str, str], str]
) -> None:
    job = make_job(api, BUSINESS)
    (created,) = job_events(conn, job["id"])
    live, gone = connected("ops-1", "ops"), connected("ops-2", "ops")
    conn.execute(  # a connection whose token ran out a minute ago
        INSERT.replace("VALUES", "").replace("expires_at)", "expires_at, connected_at)").rstrip()
        + " VALUES ('stale', 'business-1', ARRAY['business'], now() - interval '1 minute',"
        " now() - interval '2 minutes')"
    )
    queued: list[delivery.Delivery] = []
    delivery.deliver(conn, created, queued.append)
    assert [(sorted(d.post), d.close) for d in queued] == [
        (sorted([live, gone]), []),
        ([], ["stale"]),
    ]
    assert queued[0].data == created.to_json()  # the bus's bytes, as they were

    # The poster (outside the VPC, no database): posts, closes, and reports the gone.
    posted: dict[str, bytes] = {}
    closed: list[str] = []

    def post(connection_id: str, data: bytes) -> None:
        if connection_id == gone:
            raise delivery.Gone()
        posted[connection_id] = data

    done = [delivery.post_delivery(d, post, closed.append) for d in queued]
    assert posted == {live: created.to_json().encode()}
    assert [d.gone for d in done] == [[gone], []]
    assert closed == ["stale"]
    # The sender forgets what the poster reported, through the gone queue's message shape.
    report = delivery.gone_of(json.loads(delivery.gone_body(done[0].gone)))
    assert report == [gone]
    delivery.forget_gone(conn, report)
    left = {r["connection_id"] for r in conn.execute("SELECT connection_id FROM push_connections")}
    assert left == {live}


def test_a_delivery_for_many_is_split_into_messages_sqs_takes() -> None:
    many = [f"c-{n}" for n in range(delivery.IDS_PER_MESSAGE * 2 + 1)]
    parts = delivery._parts(delivery.Delivery(data="x" * 4000, post=many, close=["old"]))
    assert [len(p.post) for p in parts] == [delivery.IDS_PER_MESSAGE] * 2 + [1, 0]
    per = delivery.IDS_PER_MESSAGE
    assert [p.post for p in parts[:3]] == [many[:per], many[per : 2 * per], many[2 * per :]]
    assert parts[-1].close == ["old"]
    assert max(len(p.model_dump_json().encode()) for p in parts) < 256 * 1024


def test_the_poster_makes_its_calls_at_once() -> None:
    """POSTS_AT_ONCE posts are in flight together: the first of them wait at a barrier for one
    another, which calls made one at a time would never pass (each would fail at its timeout
    and be counted failed); the closes likewise."""
    at_once = delivery.POSTS_AT_ONCE
    ids = [f"c-{n}" for n in range(delivery.IDS_PER_MESSAGE)]
    posts, closes = threading.Barrier(at_once, timeout=10), threading.Barrier(at_once, timeout=10)
    posted: list[str] = []
    closed: list[str] = []

    def post(connection_id: str, data: bytes) -> None:
        if int(connection_id[2:]) < at_once:
            posts.wait()
        posted.append(connection_id)

    def close(connection_id: str) -> None:
        if int(connection_id[2:]) < at_once:
            closes.wait()
        closed.append(connection_id)

    done = delivery.post_delivery(delivery.Delivery(data="x", post=ids, close=ids), post, close)
    assert (done.sent, done.failed, done.gone) == (len(ids), 0, [])
    assert sorted(posted) == sorted(closed) == sorted(ids)


def test_the_expiry_sweep_drains_a_backlog_a_batch_at_a_time(
    conn: db.Connection, connected: Callable[[str, str], str]
) -> None:
    """What ran out is closed and forgotten, nothing else; more than a batch (phones on
    hour-long tokens: some 1,700 a minute at 100k) all goes in one run; a run out of time
    leaves the rest to the next."""
    live = connected("worker-1", "worker")
    conn.execute(
        "INSERT INTO push_connections (connection_id, caller_id, roles, connected_at, expires_at)"
        " SELECT 'old-' || n, 'worker-old-' || n, ARRAY['worker'], now() - interval '2 hours',"
        " now() - interval '1 second' FROM generate_series(1, 1201) n"
    )
    queued: list[delivery.Delivery] = []
    assert len(delivery.close_expired(conn, queued.append, batch=500, seconds=0)) == 500
    ended = delivery.close_expired(conn, queued.append, batch=500)
    assert len(ended) == 701
    assert sorted(c for d in queued for c in d.close) == sorted(f"old-{n}" for n in range(1, 1202))
    assert max(len(d.close) for d in queued) <= delivery.IDS_PER_MESSAGE
    assert all(d.post == [] and d.data == "" for d in queued)  # closes only
    left = {r["connection_id"] for r in conn.execute("SELECT connection_id FROM push_connections")}
    assert left == {live}


# -- the template ------------------------------------------------------------------------------


def test_only_the_poster_may_manage_connections_and_only_on_its_own_api() -> None:
    from dispatch_local.template import load_template

    resources = load_template()["Resources"]
    managers = [
        name
        for name, resource in resources.items()
        if "execute-api:ManageConnections" in str(resource.get("Properties", {}).get("Policies"))
        or "execute-api:ManageConnections" in str(resource.get("Properties", {}).get("Policy"))
    ]
    assert managers == ["PushPosterFunction"]
    manage, report = resources["PushPosterFunction"]["Properties"]["Policies"][0]["Statement"]
    assert manage["Action"] == "execute-api:ManageConnections"
    for resource in manage["Resource"]:
        assert "${PushApi}/${Stage}/" in resource["Sub"] and "@connections/*" in resource["Sub"]
    assert report == {
        "Effect": "Allow",
        "Action": "sqs:SendMessage",
        "Resource": {"GetAtt": "PushGoneQueue.Arn"},
    }
    # The authorizer runs outside the VPC too; it holds no policy at all.
    authorizer = resources["PushAuthorizerFunction"]["Properties"]
    assert "Policies" not in authorizer


def test_the_poster_runs_outside_the_vpc_and_the_sender_inside_without_the_management_api() -> None:
    """The management API is a public endpoint that no VPC endpoint serves and the stack has
    no NAT: the function that calls it must run outside the VPC; the one that reads the
    database stays inside and may only queue deliveries."""
    from dispatch_local.template import load_template

    template = load_template()
    resources = template["Resources"]
    assert "VpcConfig" in template["Globals"]["Function"]  # what "inside" means: the default
    poster = resources["PushPosterFunction"]["Properties"]
    assert poster["VpcConfig"] == {"Ref": "AWS::NoValue"}
    assert "DatabaseConnectPolicy" not in str(poster["Policies"])
    sender = resources["PushSenderFunction"]["Properties"]
    assert "VpcConfig" not in sender
    assert "PUSH_ENDPOINT" not in sender["Environment"]["Variables"]
    statements = [
        statement
        for policy in sender["Policies"]
        if isinstance(policy, dict) and "Statement" in policy
        for statement in policy["Statement"]
    ]
    assert statements == [
        {
            "Effect": "Allow",
            "Action": "sqs:SendMessage",
            "Resource": {"GetAtt": "PushDeliveryQueue.Arn"},
        }
    ]
    # Each queue of the path: encrypted, dead-lettered, consumed with a concurrency cap.
    consumers = {
        event["Properties"]["Queue"]["GetAtt"].split(".")[0]: (name, event["Properties"])
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
        for event in (resource["Properties"].get("Events") or {}).values()
        if event["Type"] == "SQS"
    }
    for queue, function in (
        ("PushDeliveryQueue", "PushPosterFunction"),
        ("PushGoneQueue", "PushSenderFunction"),
    ):
        props = resources[queue]["Properties"]
        assert props["SqsManagedSseEnabled"] is True, queue
        assert "deadLetterTargetArn" in props["RedrivePolicy"], queue
        assert consumers[queue][0] == function
        assert consumers[queue][1]["ScalingConfig"]["MaximumConcurrency"] > 0, queue


def test_the_connect_route_alone_has_the_authorizer_and_every_route_one_function() -> None:
    api = websocket_api()
    assert api is not None
    assert set(api.routes) == {"$connect", "$disconnect", "$default"}
    assert api.authorizer is not None and api.authorizer.function == "PushAuthorizerFunction"
    assert {f.function for f in api.routes.values()} == {"PushConnectionsFunction"}


def test_the_app_clients_tokens_last_a_connections_whole_life() -> None:
    """A connection ends with its token or at API Gateway's two hours (push_sql.CONNECT): the
    app client's tokens last the two hours, so a connection opened with a fresh token is not
    cut at Cognito's default hour (twice the reconnects, twice the expiry sweep's work)."""
    from dispatch_local.template import load_template

    client = load_template()["Resources"]["UserPoolClient"]["Properties"]
    units = client["TokenValidityUnits"]
    assert (client["AccessTokenValidity"], units["AccessToken"]) == (2, "hours")
    assert (client["IdTokenValidity"], units["IdToken"]) == (2, "hours")
    assert "now() + interval '2 hours'" in push_sql.CONNECT.sql
