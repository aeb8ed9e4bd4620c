"""The position stream's stand-in, for the local stack and the simulator: what API Gateway's
service integration (the template's PositionRoute into PositionStream) and Lambda's Kinesis
event source mapping (PositionsFunction) do, in process. Neither is our code in AWS: the only
code of ours on this path is the consumer, which gets the batches Lambda would hand it.

- `put`: the route's model holds the message (JSON Schema draft 4, as API Gateway checks it);
  a bad one is refused with API Gateway's own "Bad request body" and goes no further. A good
  one becomes a record as the mapping template says: its data the message as sent, its
  partition key `<roles>|<principalId>` from the connection's authorizer.
- `take` and `event`: up to the mapping's batch size, in arrival order, as a Kinesis event.
- `stand_ins`: one per stream route, shared by what puts (the local WebSocket API) and what
  takes (the local stack's consumer loop, dispatch_local.gateway.consume_stream).
"""

import base64
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft4Validator

from dispatch_local.template import StreamConsumer, StreamRoute, WebSocketApi


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


BAD_BODY = "Bad request body"  # what API Gateway tells the sender of a message its model refuses


@dataclass(frozen=True)
class Record:
    data: bytes
    partition_key: str
    arrived: float  # Unix seconds: Kinesis's approximateArrivalTimestamp
    sequence: int


class StreamStandIn:
    def __init__(self, route: StreamRoute, consumer: StreamConsumer) -> None:
        self.route, self.consumer = route, consumer
        self.validator = Draft4Validator(route.model)
        self.records: deque[Record] = deque()
        self.lock = threading.Lock()
        self.sequence = 0
        self.put_count = 0  # records put (what Kinesis bills, per 25 KB unit)
        self.refused = 0

    @property
    def arn(self) -> str:
        return f"arn:aws:kinesis:us-east-1:123456789012:stream/{self.route.stream}"

    def put(self, body: str, authorizer: dict[str, Any]) -> str | None:
        """None when the message went on the stream; else why not (API Gateway's answer)."""
        try:  # JSON as API Gateway reads it: NaN and Infinity are not numbers there
            message = json.loads(body, parse_constant=_not_json)
        except (ValueError, RecursionError):  # not JSON, or nested past what the parser takes
            message = None
        if message is None or not self.validator.is_valid(message):
            self.refused += 1
            return BAD_BODY
        key = f"{authorizer.get('roles', '')}|{authorizer.get('principalId', '')}"
        with self.lock:
            self.sequence += 1
            self.put_count += 1
            self.records.append(Record(body.encode(), key, time.time(), self.sequence))
        return None

    def take(self, now: float | None = None) -> list[Record]:
        """The next batch (at most the mapping's batch size), oldest first; records past the
        mapping's maximum age are dropped unread, as Lambda skips them."""
        now = time.time() if now is None else now
        batch: list[Record] = []
        with self.lock:
            while self.records and len(batch) < self.consumer.batch_size:
                record = self.records.popleft()
                if now - record.arrived <= self.consumer.max_age_seconds:
                    batch.append(record)
        return batch

    def ready(self, now: float | None = None) -> bool:
        """A batch is due: full, or its oldest record has waited the batching window."""
        now = time.time() if now is None else now
        with self.lock:
            if not self.records:
                return False
            full = len(self.records) >= self.consumer.batch_size
            return full or now - self.records[0].arrived >= self.consumer.window_seconds

    def event(self, batch: list[Record]) -> dict[str, Any]:
        """The batch as Lambda hands a Kinesis event source's records to the function."""
        return {
            "Records": [
                {
                    "kinesis": {
                        "kinesisSchemaVersion": "1.0",
                        "partitionKey": record.partition_key,
                        "sequenceNumber": str(record.sequence),
                        "data": base64.b64encode(record.data).decode(),
                        "approximateArrivalTimestamp": record.arrived,
                    },
                    "eventSource": "aws:kinesis",
                    "eventVersion": "1.0",
                    "eventID": f"shardId-000000000000:{record.sequence}",
                    "eventName": "aws:kinesis:record",
                    "invokeIdentityArn": "arn:aws:iam::123456789012:role/local",
                    "awsRegion": "us-east-1",
                    "eventSourceARN": self.arn,
                }
                for record in batch
            ]
        }


def stand_ins(
    api: WebSocketApi | None, consumers: list[StreamConsumer]
) -> dict[str, StreamStandIn]:
    """Each stream route's stand-in (by route key), with the consumer of its stream: made once
    where a stack is assembled, the WebSocket API putting on it and the consumer's loop taking
    from it, as both meet at the one stream in AWS."""
    found: dict[str, StreamStandIn] = {}
    for route_key, route in (api.streams if api is not None else {}).items():
        consumer = next((c for c in consumers if c.stream == route.stream), None)
        if consumer is None:  # a stream nobody reads: the local stack has nothing to run
            raise ValueError(f"route {route_key}: no function consumes {route.stream}")
        found[route_key] = StreamStandIn(route, consumer)
    return found
