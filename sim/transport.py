"""SQS, EventBridge and the position stream in process: AWS's transport, which is not ours
to simulate.

The product relays its events with `aws.client("sqs").send_message_batch`, schedules offer
waves with `send_message(DelaySeconds=...)` and puts events on the bus with
`aws.client("events").put_events`. Here those calls land in in-process queues, and the
consumers get SQS-shaped batches as the event source mapping hands them over (ten at most,
FIFO order per message group, failed items back after the visibility timeout, a dead letter
after five receives). moto stood in for SQS before, and its FIFO queue slows as it fills (each
send scans what waits): in a city's worth of traffic, it, not the dispatch, set the pace.
S3 (the photo uploads) stays on moto: uploads are real HTTP. The workers' position messages
go on the socket's route into the position stream (dispatch_local.streams, the local stack's
stand-in), whose batches the city hands to PositionsFunction.
"""

import json
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from dispatch import aws
from dispatch_local.gateway import sqs_record
from dispatch_local.streams import StreamStandIn
from dispatch_local.template import stream_consumers, websocket_api

MAX_RECEIVES = 5  # then the dead-letter queue, as the template's redrive policy says
DEDUP_SECONDS = 300  # SQS FIFO drops a repeated deduplication id within five minutes


@dataclass
class Message:
    id: str
    body: str
    group: str | None
    visible_at: float
    receives: int = 0


@dataclass
class Queue:
    url: str
    fifo: bool
    visibility_seconds: float
    messages: deque[Message] = field(default_factory=deque)
    dead: list[Message] = field(default_factory=list)
    seen: dict[str, float] = field(default_factory=dict)  # deduplication id -> when
    sent: int = 0  # SendMessage entries accepted (what SQS bills, with the receives)

    @property
    def arn(self) -> str:
        return f"arn:aws:sqs:us-east-1:123456789012:{self.url.rsplit('/', 1)[-1]}"

    def put(self, body: str, group: str | None, dedup: str | None, delay: float) -> str:
        now = time.monotonic()
        self.sent += 1
        if dedup is not None:
            if now - self.seen.get(dedup, -1e9) < DEDUP_SECONDS:
                return str(uuid.uuid4())  # accepted, and dropped: the relay is at least once
            self.seen[dedup] = now
        message = Message(str(uuid.uuid4()), body, group, now + delay)
        self.messages.append(message)
        return message.id

    def take(self, most: int) -> list[Message]:
        """Visible messages, FIFO per group: a group whose first message is not visible (in
        flight, or waiting to be retried) holds its later ones back."""
        now = time.monotonic()
        taken: list[Message] = []
        held: set[str | None] = set()
        for message in self.messages:
            if len(taken) == most:
                break
            if self.fifo and message.group in held:
                continue
            if message.visible_at <= now:
                taken.append(message)
            elif self.fifo:
                held.add(message.group)
        for message in taken:
            message.receives += 1
            message.visible_at = now + self.visibility_seconds
        return taken

    def settle(self, taken: list[Message], failed: set[str]) -> None:
        gone = {m.id for m in taken if m.id not in failed}
        for message in taken:
            if message.id in failed and message.receives >= MAX_RECEIVES:
                self.dead.append(message)
                gone.add(message.id)
        self.messages = deque(m for m in self.messages if m.id not in gone)


class Sqs:
    """What the product calls on `aws.client("sqs")`."""

    def __init__(self, queues: dict[str, Queue]) -> None:
        self.queues = queues

    def send_message_batch(self, QueueUrl: str, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        queue = self.queues[QueueUrl]
        for entry in Entries:
            queue.put(
                entry["MessageBody"],
                entry.get("MessageGroupId"),
                entry.get("MessageDeduplicationId"),
                float(entry.get("DelaySeconds", 0)),
            )
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}

    def send_message(
        self,
        QueueUrl: str,
        MessageBody: str,
        DelaySeconds: int = 0,
        **rest: Any,
    ) -> dict[str, Any]:
        queue = self.queues[QueueUrl]
        return {"MessageId": queue.put(MessageBody, None, None, float(DelaySeconds))}


class Bus:
    """What the product calls on `aws.client("events")`: each entry goes to the observers (the
    template has no rule on the bus: its consumers are elsewhere, and push is the publisher's
    hand-off)."""

    def __init__(self) -> None:
        self.observers: list[Callable[[str, dict[str, Any]], None]] = []
        self.put = 0
        self.errors: list[str] = []  # the city's own mistakes, never the product's

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        for entry in Entries:
            self.put += 1
            detail = json.loads(entry["Detail"])
            for observe in self.observers:
                try:
                    observe(entry["DetailType"], detail)
                except Exception:  # a bug in the simulation must not look like a failed put
                    self.errors.append(traceback.format_exc())
        return {"FailedEntryCount": 0, "Entries": [{"EventId": str(uuid.uuid4())} for _ in Entries]}


class Transport:
    """The outbox queue, the offer queue, the push queues, the bus and the position stream, in
    process, and their consumers. The push queues are fed (the publisher's deliveries) only
    when the run samples phones over real sockets (sim/push.py); the stream only when the
    workers report by the rule (scenario `workers.reporting`)."""

    OUTBOX = "https://sqs.local/123456789012/dispatch-sim-outbox.fifo"
    OFFERS = "https://sqs.local/123456789012/dispatch-sim-offers"
    PUSH_DELIVERY = "https://sqs.local/123456789012/dispatch-sim-push-delivery"
    PUSH_GONE = "https://sqs.local/123456789012/dispatch-sim-push-gone"

    def __init__(self, visibility_seconds: float, speed: float = 1.0) -> None:
        self.queues = {
            url: Queue(url, fifo=url.endswith(".fifo"), visibility_seconds=visibility_seconds)
            for url in (self.OUTBOX, self.OFFERS, self.PUSH_DELIVERY, self.PUSH_GONE)
        }
        self.sqs = Sqs(self.queues)
        self.bus = Bus()
        self.positions = position_stream(speed)
        self.deliveries = 0
        self._real_client = aws.client

    def install(self) -> None:
        """Serve `aws.client("sqs")` and `aws.client("events")` from here; S3 stays real."""

        def client(service: str) -> Any:
            if service == "sqs":
                return self.sqs
            if service == "events":
                return self.bus
            return self._real_client(service)

        aws.client = client  # type: ignore[assignment]

    def uninstall(self) -> None:
        aws.client = self._real_client

    def deliver(self, url: str, handle: Callable[[dict[str, Any]], Any], batch: int = 10) -> int:
        """One receive and one invocation, as the event source mapping makes them; how many
        messages it carried."""
        queue = self.queues[url]
        taken = queue.take(batch)
        if not taken:
            return 0
        records = [
            sqs_record(
                {
                    "MessageId": m.id,
                    "ReceiptHandle": m.id,
                    "Body": m.body,
                    "Attributes": {
                        "ApproximateReceiveCount": str(m.receives),
                        **({"MessageGroupId": m.group} if m.group else {}),
                    },
                },
                queue.arn,
            )
            for m in taken
        ]
        try:
            answer = handle({"Records": records}) or {}
            failed = {f["itemIdentifier"] for f in answer.get("batchItemFailures", [])}
        except Exception:  # an invocation that fails fails its whole batch
            failed = {m.id for m in taken}
        queue.settle(taken, failed)
        self.deliveries += 1
        return len(taken)

    def next_due(self) -> float | None:
        """The earliest moment (time.monotonic()) a waiting message becomes visible."""
        times = [m.visible_at for q in self.queues.values() for m in q.messages]
        return min(times) if times else None

    def waiting(self) -> int:
        return sum(len(q.messages) for q in self.queues.values())

    def dead_letters(self) -> int:
        return sum(len(q.dead) for q in self.queues.values())


def position_stream(speed: float) -> StreamStandIn:
    """The socket's `position` route into the position stream, as the template has them; the
    event source mapping's batching window and records' maximum age are the city's seconds,
    divided by the speed as the product's own durations and the queues' timeouts are."""
    api = websocket_api()
    assert api is not None, "the template has no WebSocket API"
    route = api.streams["position"]
    (consumer,) = (c for c in stream_consumers() if c.stream == route.stream)
    scaled = replace(
        consumer,
        window_seconds=consumer.window_seconds / speed,
        max_age_seconds=consumer.max_age_seconds / speed,
    )
    return StreamStandIn(route, scaled)
