"""Push in two steps (docs/architecture.md, "Push"). The publisher, in the VPC beside the
database, once it has put a batch of events on the bus, decides who hears each and puts the
deliveries (the message and the connection ids) on the delivery queue (`push_published`); the
poster, outside the VPC (the management API is a public endpoint no VPC endpoint serves),
posts them through API Gateway's management API and puts the connections it found gone on the
gone queue, which the sender takes to forget them; the sender also ends, every minute, the
connections whose token expired. Push is a hint: a send that fails is logged and counted,
never retried (a retry would repeat the event to everyone else; the device pulls what it
missed)."""

import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from pydantic import Field

from dispatch import aws, db
from dispatch.config.push import push_settings
from dispatch.events import Event
from dispatch.models import Model
from dispatch.observability import count, logger
from dispatch.push import connections


class Gone(Exception):
    """The connection is no longer there (API Gateway's 410)."""


Post = Callable[[str, bytes], None]
Close = Callable[[str], None]

# The poster's calls at once: each waits on the management API (20-40 ms from a Lambda) and
# each is for one connection, so they are independent. One at a time, a message of 1,000 ids
# took 20-40 s, past the poster's 10 s timeout: retried, dead-lettered, alarmed.
POSTS_AT_ONCE = 32
# Connection ids per delivery message, sized to the poster's timeout: an invocation takes up to
# 10 messages (BatchSize), so at 40 ms a call and POSTS_AT_ONCE it posts or closes 2,500 in
# about 3 s, a third of its 10 s (a call that hangs waits out the client's read timeout, 2 s).
IDS_PER_MESSAGE = 250
# How long one run of the expiry sweep goes on closing, a batch of EXPIRED_BATCH at a time: all
# that has expired, unless it is more than fits in this (the next minute's run goes on), well
# inside the sender's 10 s. At 100k phones on tokens of an hour some 1,700 expire a minute.
EXPIRY_SECONDS = 5.0
EXPIRED_BATCH = 500


class Delivery(Model):
    """One message on the delivery queue: `data` to every id in `post`; `close` ends the
    connections in it (their token expired; the sender has already forgotten them)."""

    data: str = ""
    post: list[str] = Field(default_factory=list)
    close: list[str] = Field(default_factory=list)


Send = Callable[[Delivery], None]


@dataclass
class Delivered:
    sent: int = 0
    gone: list[str] = field(default_factory=list)
    failed: int = 0


# -- the publisher's hand-off (in the VPC): who hears it --------------------------------------


def push_published(conn: db.Connection, events: Sequence[Event]) -> None:
    """The deliveries of events the publisher has just put on the bus, onto the delivery queue,
    ten messages to a call, each job's in its order. Three hops fewer than a rule, a queue and
    a function of their own between the bus and the poster. A hint: whatever fails here is
    logged and counted, never raised, so the publish goes on (the devices pull). Nothing when
    the stack has no push (no delivery queue: the simulator without phones)."""
    url = push_settings().push_delivery_queue_url
    if not url or not events:
        return
    try:
        deliveries: list[Delivery] = []
        for event in events:
            deliver(conn, event, deliveries.append)
        for start in range(0, len(deliveries), SEND_MAX):
            sent = aws.client("sqs").send_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(n), "MessageBody": part.model_dump_json()}
                    for n, part in enumerate(deliveries[start : start + SEND_MAX])
                ],
            )
            if sent.get("Failed"):
                count("PushFailed", len(sent["Failed"]))
                logger.warning("push deliveries not queued", extra={"failed": sent["Failed"]})
    except Exception:
        count("PushFailed", len(events))
        logger.warning("push deliveries not queued", exc_info=True)


SEND_MAX = 10  # messages per SendMessageBatch (a message of IDS_PER_MESSAGE ids is a few KB)


# -- who hears it ---------------------------------------------------------------------------


def deliver(conn: db.Connection, event: Event, send: Send) -> Delivery:
    """The event's deliveries onto the queue: posted to its live recipients, closing the
    expired ones (a token that expired never hears another event), which are forgotten now."""
    live: list[str] = []
    expired: list[str] = []
    for recipient in connections.recipients(conn, event):
        (expired if recipient.expired else live).append(recipient.connection_id)
    whole = Delivery(data=event.to_json(), post=live, close=expired)
    for part in _parts(whole):
        send(part)
    connections.forget(conn, expired)
    return whole


def close_expired(
    conn: db.Connection, send: Send, batch: int = EXPIRED_BATCH, seconds: float = EXPIRY_SECONDS
) -> list[str]:
    """End every connection whose token (or two hours) ran out: forget it, and have the
    poster close it; a batch at a time until none is left or `seconds` have gone."""
    ended: list[str] = []
    deadline = time.monotonic() + seconds
    while True:
        expired = connections.expired(conn, batch)
        for part in _parts(Delivery(close=expired)):
            send(part)
        connections.forget(conn, expired)
        ended += expired
        if len(expired) < batch or time.monotonic() >= deadline:
            return ended


def forget_gone(conn: db.Connection, connection_ids: Sequence[str]) -> None:
    """The connections the poster found gone (410)."""
    connections.forget(conn, connection_ids)
    count("PushGone", len(connection_ids))


def _parts(delivery: Delivery) -> list[Delivery]:
    if not delivery.post and not delivery.close:
        return []
    posts = [
        delivery.post[i : i + IDS_PER_MESSAGE]
        for i in range(0, len(delivery.post), IDS_PER_MESSAGE)
    ]
    closes = [
        delivery.close[i : i + IDS_PER_MESSAGE]
        for i in range(0, len(delivery.close), IDS_PER_MESSAGE)
    ]
    parts = [Delivery(data=delivery.data, post=ids) for ids in posts]
    parts += [Delivery(close=ids) for ids in closes]
    return parts


def send_to_delivery_queue(delivery: Delivery) -> None:
    aws.client("sqs").send_message(
        QueueUrl=push_settings().push_delivery_queue_url, MessageBody=delivery.model_dump_json()
    )


# -- the poster (outside the VPC): the management API ------------------------------------------


@cache
def _calls() -> ThreadPoolExecutor:
    """The poster's calls at once (one pool per environment, made at its first delivery)."""
    return ThreadPoolExecutor(POSTS_AT_ONCE, thread_name_prefix="post")


def post_delivery(delivery: Delivery, post: Post, close: Close) -> Delivered:
    """Post the data to each connection and close the ones to close, POSTS_AT_ONCE calls at
    a time; report which were gone."""
    data = delivery.data.encode()

    def posted(connection_id: str) -> str:
        try:
            post(connection_id, data)
            return "sent"
        except Gone:
            return "gone"
        except Exception:  # a hint lost: the device pulls it when it looks
            logger.warning("push failed", extra={"connection_id": connection_id}, exc_info=True)
            return "failed"

    def closed(connection_id: str) -> None:
        try:
            close(connection_id)
        except Gone:  # already gone: what closing wanted
            pass
        except Exception:  # it ends at API Gateway's two hours, or idle, at the latest
            logger.warning("close failed", extra={"connection_id": connection_id}, exc_info=True)

    outcomes = list(_calls().map(posted, delivery.post))
    list(_calls().map(closed, delivery.close))
    done = Delivered(
        sent=outcomes.count("sent"),
        gone=[c for c, outcome in zip(delivery.post, outcomes, strict=True) if outcome == "gone"],
        failed=outcomes.count("failed"),
    )
    count("PushSent", done.sent)
    if done.failed:
        count("PushFailed", done.failed)
    return done


def gone_body(connection_ids: Sequence[str]) -> str:
    return json.dumps({"gone": list(connection_ids)})


def gone_of(body: dict[str, Any]) -> list[str] | None:
    """The ids of a gone report, or None when the body is not one."""
    ids = body.get("gone")
    return [str(i) for i in ids] if isinstance(ids, list) else None


def report_gone(connection_ids: Sequence[str]) -> None:
    """The gone ids onto the gone queue, for the sender to forget. Best effort: one not
    reported is tried again by the next event (another 410) and forgotten by the expiry
    sweep at the latest."""
    if not connection_ids:
        return
    try:
        aws.client("sqs").send_message(
            QueueUrl=push_settings().push_gone_queue_url, MessageBody=gone_body(connection_ids)
        )
    except Exception:
        logger.warning("could not report gone connections", exc_info=True)


# -- API Gateway's management API (boto3), or the local gateway's copy of it ------------------


@cache
def management() -> Any:
    """The `apigatewaymanagementapi` client of the WebSocket API's stage (PUSH_ENDPOINT):
    https://{api}.execute-api.{region}.amazonaws.com/{stage} in AWS, the local stack's own
    address locally (it serves the same `/@connections/{id}` calls)."""
    import boto3
    from botocore.config import Config

    endpoint = push_settings().push_endpoint
    if not endpoint:
        raise RuntimeError("PUSH_ENDPOINT is not set")
    config = Config(
        connect_timeout=2,
        read_timeout=2,
        retries={"max_attempts": 2},
        max_pool_connections=POSTS_AT_ONCE,  # one HTTP connection per call at once
    )
    return boto3.client("apigatewaymanagementapi", endpoint_url=endpoint, config=config)


def _gone_on_410(call: Callable[[], Any]) -> None:
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as error:
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if status == 410 or error.response.get("Error", {}).get("Code") == "GoneException":
            raise Gone() from error
        raise


def post_to_connection(connection_id: str, data: bytes) -> None:
    _gone_on_410(lambda: management().post_to_connection(ConnectionId=connection_id, Data=data))


def delete_connection(connection_id: str) -> None:
    _gone_on_410(lambda: management().delete_connection(ConnectionId=connection_id))
