"""Outbox benchmark: drain a backlog of job events with the catch-up relay.

    make bench-outbox            (or: python -m bench.outbox [--quick] [--events 100000])

In the same run, on the same kind of rows:
- relay:  `dispatch.relay.catch_up` (claim a batch with SKIP LOCKED, send, mark), with the SQS
          send replaced by a no-op at the network boundary, so Postgres is what is measured
          (the message bodies are built by Postgres in both designs);
- naive:  the loop people write first: select the oldest unpublished row, send it, mark it,
          one row at a time (measured on a slice of the backlog: it is slow);
- moto:   the relay end to end through SQS (moto's server on loopback), on a smaller backlog;
- accept under a backlog: the accept handler (in process, relaying its own events to SQS on
          moto after its commit) with every other event published, and with a backlog of
          10,000 unpublished events of other jobs (an SQS outage not yet caught up),
          interleaved A B B A. A write relays its own job's events only, so the backlog must
          not show in its latency (aim: within 1.2x).
"""

import argparse
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from uuid import UUID

from bench.common import Timing, bench_database, timing
from dispatch import db
from dispatch.config import settings
from dispatch.outbox import relay
from dispatch_local import environment_restored
from dispatch_local.services import app_url

RESULTS = Path(__file__).parent / "results"
EVENTS_PER_JOB = 4

SETUP = [
    "TRUNCATE jobs, job_events, idempotency_keys, workers, photos CASCADE",
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-1', 12.97, 77.59, '{}', now() + interval '1 hour', now() + interval '3 hours'
         FROM generate_series(1, %(jobs)s)""",
    """INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
       SELECT j.id, 'job.checked_in', v, 'w-1', now() - interval '1 hour' + v * interval '1 ms',
              dispatch_job(j)  -- a real event's size
         FROM jobs j, generate_series(1, %(per_job)s) v""",
    "VACUUM ANALYZE job_events",
]

# The same message, serialised the same way: only the claiming differs.
NAIVE_NEXT = """
SELECT id, job_id, version, false AS offer, occurred_at, dispatch_event(job_events)::text AS body
  FROM job_events
 WHERE published_at IS NULL AND relayed_at IS NULL ORDER BY occurred_at LIMIT 1
"""
NAIVE_MARK = "UPDATE job_events SET relayed_at = now() WHERE id = %s"


def no_op_send(messages: list[relay.Message], deadline: float = float("inf")) -> set[UUID]:
    return {m.id for m in messages}


@dataclass
class Rate:
    events: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.events / self.seconds


def backlog(url: str, events: int) -> None:
    with db.connect(url) as conn:
        for statement in SETUP:
            conn.execute(statement, {"jobs": events // EVENTS_PER_JOB, "per_job": EVENTS_PER_JOB})


def relay_rate(url: str, send: relay.Send) -> Rate:
    with db.connect(url) as conn:
        t0 = time.perf_counter()
        sent = relay.catch_up(conn, send)
        return Rate(sent, time.perf_counter() - t0)


def naive_rate(url: str, events: int) -> Rate:
    with db.connect(url) as conn:
        t0 = time.perf_counter()
        for _ in range(events):
            row = conn.execute(NAIVE_NEXT).fetchone()
            assert row is not None
            no_op_send([relay.Message(**row)])
            conn.execute(NAIVE_MARK, (row["id"],))
        return Rate(events, time.perf_counter() - t0)


ACCEPT_JOBS = """
INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
SELECT 'b-accept', 12.97, 77.59, '{}', now() + interval '1 hour', now() + interval '3 hours'
  FROM generate_series(1, %(jobs)s)
RETURNING id
"""
# The backlog is waiting or on the bus at will, so both conditions run on the same rows.
BACKLOG_WAITING = """
UPDATE job_events SET published_at = NULL, relayed_at = NULL WHERE job_id <> ALL(%(own)s)
"""
BACKLOG_SENT = """
UPDATE job_events SET published_at = now(), relayed_at = now() WHERE published_at IS NULL
"""


def accept_under_backlog(url: str, accepts: int, backlog_events: int) -> dict[str, Timing]:
    """p50/p99 of the accept handler with and without a backlog of other jobs' events."""
    with environment_restored("OUTBOX_QUEUE_URL"):
        return _accept_under_backlog(url, accepts, backlog_events)


def _accept_under_backlog(url: str, accepts: int, backlog_events: int) -> dict[str, Timing]:
    from bench.accept import api_gateway_event
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import handler_of, routes

    backlog(url, backlog_events)
    with db.connect(url) as conn:
        jobs = [row["id"] for row in conn.execute(ACCEPT_JOBS, {"jobs": accepts})]
        conn.execute(BACKLOG_SENT)
    (route,) = [r for r in routes() if r.function == "AcceptJobFunction"]
    handler = handler_of(route)
    without, waiting_ = "no backlog", f"{backlog_events:,} waiting"
    latencies: dict[str, list[int]] = {without: [], waiting_: []}
    order = [without, waiting_, waiting_, without]  # A B B A: drift hits both alike
    per_round = accepts // len(order)
    with db.connect(url) as conn:
        for n, condition in enumerate(order):
            toggle = BACKLOG_SENT if condition == without else BACKLOG_WAITING
            conn.execute(toggle, {"own": jobs})
            conn.execute("VACUUM ANALYZE job_events")  # the toggle's dead rows are not the test
            fresh_queue(f"dispatch-bench-{os.getpid()}-{n}")
            for job_id in jobs[n * per_round : (n + 1) * per_round]:
                event = api_gateway_event(job_id, f"w-{job_id}")
                t0 = time.perf_counter_ns()
                answer = handler(event, LambdaContext(function_name=route.function))
                latencies[condition].append(time.perf_counter_ns() - t0)
                assert answer["statusCode"] == 200, answer
            waiting = conn.execute(
                "SELECT count(*) AS n FROM job_events WHERE relayed_at IS NULL"
            ).fetchone()
            expected = 0 if condition == without else backlog_events
            assert waiting == {"n": expected}, (condition, waiting)  # nobody else's went out
    return {name: timing(values, sum(values) / 1e9) for name, values in latencies.items()}


def fresh_queue(name: str) -> None:
    """An empty outbox queue for each round: moto's FIFO queue slows as it fills (each send
    takes longer with every message waiting in it), which is moto's, not the relay's."""
    from dispatch_local import embedded

    if not os.environ.get("AWS_ENDPOINT_URL"):
        embedded.use_aws_stand_in(embedded.aws())
    os.environ["OUTBOX_QUEUE_URL"] = embedded.ensure_outbox(name)
    settings.cache_clear()


def backlog_report(timings: dict[str, Timing]) -> str:
    base = next(iter(timings.values()))
    lines = [
        "| accept (handler, relays after commit) | accepts | p50 ms | p99 ms | p99 x no backlog |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, t in timings.items():
        ratio = t.p99_ms / base.p99_ms
        lines.append(f"| {name} | {t.count:,} | {t.p50_ms:.2f} | {t.p99_ms:.2f} | {ratio:.2f} |")
    return "\n".join(lines)


def run(url: str, events: int, naive_events: int, moto_events: int) -> dict[str, Rate]:
    rates: dict[str, Rate] = {}
    backlog(url, events)
    rates["relay"] = relay_rate(url, no_op_send)
    assert rates["relay"].events == events, rates["relay"]
    backlog(url, events)
    rates["naive"] = naive_rate(url, naive_events)
    if moto_events:
        with environment_restored("OUTBOX_QUEUE_URL"):
            fresh_queue("dispatch-bench")
            backlog(url, moto_events)
            rates["relay through SQS (moto)"] = relay_rate(url, relay.sqs_send)
    return rates


def report(rates: dict[str, Rate]) -> str:
    base = rates["naive"].per_second
    lines = [
        "| drain | events | seconds | events/s | x naive |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, r in rates.items():
        lines.append(
            f"| {name} | {r.events:,} | {r.seconds:.2f} | {r.per_second:,.0f} | "
            f"{r.per_second / base:.1f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.outbox", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--naive-events", type=int, default=5_000)
    parser.add_argument("--moto-events", type=int, default=400)  # moto is slow, and only a stand-in
    parser.add_argument("--accepts", type=int, default=400)
    parser.add_argument("--backlog", type=int, default=10_000)
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    sizes = (400, 100, 40) if args.quick else (args.events, args.naive_events, args.moto_events)
    accepts, waiting = (8, 200) if args.quick else (args.accepts, args.backlog)
    with bench_database() as url:
        rates = run(url, *sizes)
    with bench_database() as url:
        os.environ["DATABASE_URL"] = app_url(url)
        os.environ["POWERTOOLS_METRICS_DISABLED"] = "true"  # stdout I/O is not what we measure
        settings.cache_clear()
        under_backlog = accept_under_backlog(url, accepts, waiting)
    text = report(rates) + "\n\n" + backlog_report(under_backlog)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "outbox.md").write_text(text + "\n")
    (RESULTS / "outbox.json").write_text(
        json.dumps(
            {
                **{k: {**asdict(v), "per_second": v.per_second} for k, v in rates.items()},
                "accept_under_backlog": {k: asdict(v) for k, v in under_backlog.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
