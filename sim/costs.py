"""What a run would cost in AWS: the bill per 1,000 filled jobs at list prices
(sim/prices.toml, dated), from what the run measured (`kpis["aws"]`, sim/run.py `usage`).

Each item, and how it is counted:

- API Gateway: every request the city made (HTTP API, per request).
- WebSocket messages: every position message the workers' sockets sent (by the rule).
- Kinesis: the position stream's shards for the run's hours, as many as its busiest city
  second needs (at least one; none when nothing was put, as when the workers report by
  interval and the stream is not today's path), and a PUT payload unit per record.
- Lambda requests: every API request, every queue or stream batch a consumer took, and the
  two schedules (sweeper, catch-up relay) once a minute of the city's time, as AWS runs them.
- Lambda duration: the handler seconds measured in the run (this machine's, one process on
  a shared core: an upper bound for a Lambda arm64 environment), each invocation rounded up
  to the billed millisecond, at 512 MB; plus the relay's 55 s of polling a minute.
- SQS: messages sent (each counted as a request: the relay batches up to ten, so this is an
  upper bound), and a receive and a delete per batch taken.
- EventBridge: events put on the bus.
- Aurora: the writer's ACUs and RDS Proxy's minimum for the run's hours (city time).
- Cache: the serverless cache's minimum storage for the run's hours, and an ECPU per
  command (about three per position written, four per wave): a PUT, a stream record the
  consumer wrote, an offers pull that carried the position.

Everything is per run, then divided by the filled jobs and multiplied by 1,000.
"""

import math
import tomllib
from pathlib import Path
from typing import Any

PRICES = Path(__file__).parent / "prices.toml"
QUEUE_CONSUMERS = ("OutboxQueue", "OfferQueue", "PushDeliveryQueue", "PushGoneQueue")
STREAM_CONSUMERS = ("PositionStream",)
SCHEDULED = ("LeaseSweeper", "OutboxRelay")


def prices() -> dict[str, Any]:
    return tomllib.loads(PRICES.read_text())


def bill(kpis: dict[str, Any], hours: float, p: dict[str, Any] | None = None) -> dict[str, float]:
    """Dollars per item for the whole run (city `hours`)."""
    p = p or prices()
    aws = kpis["aws"]
    invocations: dict[str, int] = aws["invocations"]
    seconds: dict[str, float] = aws["handler_seconds"]
    consumers = QUEUE_CONSUMERS + STREAM_CONSUMERS
    api_requests = sum(n for f, n in invocations.items() if f not in consumers + SCHEDULED)
    consumer_batches = sum(invocations.get(q, 0) for q in consumers)
    schedule_runs = 2 * p["schedules"]["per_hour"] * hours
    lam = p["lambda"]
    billed = sum(v for f, v in seconds.items() if f not in SCHEDULED)
    billed += sum(invocations.get(f, 0) for f in invocations) * lam["billed_ms_round"] / 2000
    billed += seconds.get("LeaseSweeper", 0.0)
    billed += p["schedules"]["per_hour"] * hours * p["schedules"]["relay_seconds"]
    sent = aws["sqs_sent"]
    receives = aws["sqs_receives"]
    fifo = sum(n for queue, n in sent.items() if queue.endswith(".fifo"))
    standard = sum(sent.values()) - fifo
    positions = aws.get("positions", {})  # runs before the position stream have none
    puts = positions.get("stream_puts", 0)
    location_reports = (
        invocations.get("PUT /workers/me/location", 0)
        + puts
        - positions.get("stream_skipped", 0)
        + positions.get("reads_with_position", 0)
    )
    waves = invocations.get("OfferQueue", 0)
    kinesis = p["kinesis"]
    shards = (
        max(1, math.ceil(positions["peak_puts_per_second"] / kinesis["records_per_shard_second"]))
        if puts
        else 0
    )
    aurora = p["aurora"]
    cache = p["cache"]
    return {
        "API Gateway requests": api_requests * p["api_gateway"]["per_million_requests"] / 1e6,
        "WebSocket messages": positions.get("socket_messages", 0)
        * p["websocket"]["per_million_messages"]
        / 1e6,
        "Kinesis": shards * hours * kinesis["per_shard_hour"]
        + puts * kinesis["per_million_put_units"] / 1e6,
        "Lambda requests": (api_requests + consumer_batches + schedule_runs)
        * lam["per_million_requests"]
        / 1e6,
        "Lambda GB-seconds": billed * lam["memory_gb"] * lam["per_gb_second"],
        "SQS requests": (
            standard * p["sqs"]["per_million_requests"]
            + (fifo + 2 * receives) * p["sqs"]["per_million_fifo_requests"]
        )
        / 1e6,
        "EventBridge events": aws["events_put"] * p["eventbridge"]["per_million_events"] / 1e6,
        "Aurora writer and proxy": hours
        * (
            aurora["acu"] * aurora["per_acu_hour"]
            + aurora["proxy_min_acu"] * aurora["proxy_per_acu_hour"]
        ),
        "cache": hours * cache["min_gb"] * cache["per_gb_hour"]
        + (3 * location_reports + 4 * waves) * cache["per_million_ecpu"] / 1e6,
    }


def without_proxy(p: dict[str, Any]) -> dict[str, Any]:
    """The prices with no RDS Proxy: the functions sign in to the writer directly (IAM auth
    works there too), which a load this size allows (`busy_environments`)."""
    return {**p, "aurora": {**p["aurora"], "proxy_min_acu": 0}}


def busy_environments(kpis: dict[str, Any], hours: float) -> float:
    """How many Lambda environments were busy on average (handler seconds over the city's
    seconds): the connections the writer must hold, give or take the peaks."""
    seconds: float = sum(kpis["aws"]["handler_seconds"].values())
    return seconds / (hours * 3600)


def per_thousand_filled(
    kpis: dict[str, Any], hours: float, p: dict[str, Any] | None = None
) -> dict[str, float]:
    """The bill per 1,000 filled jobs, by item (and `total`)."""
    filled = (kpis["fill_rate"] or 0) * kpis["jobs"]
    items = bill(kpis, hours, p)
    scale = 1000 / filled if filled else 0.0
    out = {item: dollars * scale for item, dollars in items.items()}
    out["total"] = sum(out.values())
    return out
