"""Ops reads benchmark: the console's four routes at the simulated district's scale.

    make bench-ops               (or: python -m bench.ops [--quick] [--queries 300])

The city, as `make simulate`'s district leaves it after a two-hour rush: 2,000 workers with
fresh positions in Redis (a tenth of them holding a live job), 1,200 jobs posted over the last
two hours in the 40 x 40 km metro (open, assigned, in progress, completed, cancelled, expired),
their job events, and ten offer events per job. Each route is timed whole through its real
handler (the event built off the clock, in process, warm), against the floor: the very
statements and Redis calls the route makes, sent bare through psycopg and redis-py on the
same data, interleaved A B B A. The console polls these every two seconds.
"""

import argparse
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import redis

from bench.common import Timing, bench_database, bench_redis, one, timing
from dispatch import db
from dispatch_local import environment_restored
from dispatch_local.services import app_url

RESULTS = Path(__file__).parent / "results"
METRO = (12.97, 77.59)
BBOX = "77.41,12.79,77.78,13.15"  # the console's first view (template.yaml: ConsoleBbox)
OPS = ("ops-bench", "ops")
# (status, share of the 1,200 jobs): what the district looks like at the end of its rush.
MIX = (
    ("open", 0.12),
    ("assigned", 0.14),
    ("in_progress", 0.06),
    ("completed", 0.52),
    ("cancelled", 0.10),
    ("expired", 0.06),
)
LIVE = ("open", "assigned", "in_progress")
WORKERS = 2_000
JOBS = 1_200
OFFERS_PER_JOB = 10

# Each status's history: its events in version order (the job's version is the last one).
HISTORY = {
    "open": ["job.created"],
    "assigned": ["job.created", "job.assigned"],
    "in_progress": ["job.created", "job.assigned", "job.photo_attached", "job.started"],
    "completed": [
        "job.created", "job.assigned", "job.photo_attached", "job.started",
        "job.photo_attached", "job.completed",
    ],
    "cancelled": ["job.created", "job.cancelled"],
    "expired": ["job.created", "job.expired"],
}  # fmt: skip

# One transaction per job, as the product writes them (the event stream orders by transaction).
JOB = """
WITH job AS (
    INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end, status,
                      version, assignee_id, lease_expires_at, before_photo_id, after_photo_id,
                      created_at, updated_at)
    VALUES (%(business)s, %(lat)s, %(lng)s, '{wash}',
            now() - %(age)s * interval '1 minute' - interval '5 minutes',
            now() - %(age)s * interval '1 minute' + %(window)s * interval '1 minute',
            %(status)s, cardinality(%(history)s::text[]), %(assignee)s,
            CASE WHEN %(status)s = 'assigned' THEN now() + interval '3 minutes' END,
            %(before)s, %(after)s,
            now() - %(age)s * interval '1 minute', now() - %(age)s / 2 * interval '1 minute')
    RETURNING *
), events AS (
    INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
    SELECT job.id, h.type, h.version, job.business_id,
           job.created_at + h.version * interval '1 minute', dispatch_job(job)
      FROM job, unnest(%(history)s::text[]) WITH ORDINALITY AS h(type, version)
)
INSERT INTO offer_events (job_id, type, version, occurred_at, data)
SELECT job.id, 'offer.created', 1, job.created_at + o * interval '5 seconds',
       jsonb_build_object('worker_id', 'w-' || o, 'distance_m', o * 250.0, 'wave', 1 + o / 4,
                          'radius_m', 3000, 'job', dispatch_job_summary(job))
  FROM job, generate_series(1, %(offers)s) o
"""
PHOTO = (
    "INSERT INTO photos (owner_id, s3_key, content_type) VALUES (%s, %s, 'image/jpeg') RETURNING id"
)


def build_city(url: str, redis_url: str, seed: int = 13) -> None:
    """The district after its rush, on `url`'s database and `redis_url`'s positions."""
    from dispatch.workers import locations
    from dispatch.workers.models import WorkerPosition

    rng = random.Random(seed)
    statuses = [status for status, share in MIX for _ in range(round(share * JOBS))]
    rng.shuffle(statuses)
    busy = iter(range(WORKERS))
    with db.connect(url) as conn:
        conn.execute("TRUNCATE jobs, job_events, offer_events, photos CASCADE")
        for n, status in enumerate(statuses):
            lat = METRO[0] + rng.uniform(-0.18, 0.18)
            lng = METRO[1] + rng.uniform(-0.18, 0.18)
            holder = f"w-{next(busy)}" if status in ("assigned", "in_progress") else None
            done_by = holder or (f"w-done-{n}" if status == "completed" else None)
            before = after = None
            if status in ("in_progress", "completed"):
                before = one(conn.execute(PHOTO, (done_by, f"photos/{n}/before")))["id"]
            if status == "completed":
                after = one(conn.execute(PHOTO, (done_by, f"photos/{n}/after")))["id"]
            conn.execute(
                JOB,
                {
                    "business": f"b-{n % 50}",
                    "lat": lat,
                    "lng": lng,
                    "age": rng.uniform(1, 120) if status != "expired" else rng.uniform(90, 120),
                    "window": 30 if status == "expired" else 180,
                    "status": status,
                    "history": HISTORY[status],
                    "assignee": done_by,
                    "before": before,
                    "after": after,
                    "offers": OFFERS_PER_JOB,
                },
            )
        conn.execute("VACUUM ANALYZE")
    locations.forget_everyone(redis.Redis.from_url(redis_url))
    now = time.time()
    for w in range(WORKERS):
        lat = METRO[0] + rng.uniform(-0.18, 0.18)
        lng = METRO[1] + rng.uniform(-0.18, 0.18)
        locations.report(f"w-{w}", WorkerPosition(lat=lat, lng=lng), now=now - rng.uniform(0, 30))


@dataclass(frozen=True)
class RouteTiming:
    route: str
    handler: Timing
    floor: Timing
    answer_items: int  # jobs, workers or events in one answer

    @property
    def ratio(self) -> float:
        return self.handler.p99_ms / self.floor.p99_ms


def floors(conn: db.Connection, client: redis.Redis, cursor: tuple[str, str]) -> dict[str, Any]:
    """Each route's own statements and Redis calls, bare: what the handler cannot go below."""
    from dispatch.ops import sql
    from dispatch.outbox.sql import RELAY_LAG
    from dispatch.workers import locations

    box = dict(min_lng=77.41, min_lat=12.79, max_lng=77.78, max_lat=13.15)
    live = list(LIVE)

    def jobs() -> None:
        conn.execute(sql.JOBS_IN_BOX.sql, {**box, "statuses": live, "limit": 1000}).fetchall()

    cells = [locations.cell_keys(cell) for cell in locations.cells_in_box(
        box["min_lng"], box["min_lat"], box["max_lng"], box["max_lat"])]  # fmt: skip

    def workers() -> None:
        """Each cell's search, then when each found was seen, one pipeline each (as the route)."""
        pipe = client.pipeline(transaction=False)
        for keys in cells:
            pipe.geosearch(
                keys.positions, longitude=77.595, latitude=12.97, width=40_500, height=40_400,
                unit="m", sort="ASC", count=5000, withcoord=True,
            )  # fmt: skip
        found = [[w.decode() for w, _ in hits] for hits in pipe.execute()]
        pipe = client.pipeline(transaction=False)
        for keys, ids in zip(cells, found, strict=True):
            if ids:
                pipe.zmscore(keys.seen, ids)
        pipe.execute()
        conn.execute(sql.BUSY_WORKERS.sql, {"ids": [w for ids in found for w in ids]}).fetchall()

    def events() -> None:
        conn.execute(
            sql.EVENTS_AFTER.sql, {"tx": cursor[0], "id": cursor[1], "limit": 100}
        ).fetchall()

    def summary() -> None:
        conn.execute(sql.JOBS_BY_STATUS.sql).fetchall()
        conn.execute(sql.LAST_HOUR.sql).fetchone()
        conn.execute(RELAY_LAG.sql).fetchone()

    return {"jobs": jobs, "workers": workers, "events": events, "summary": summary}


def measure(url: str, redis_url: str, queries: int) -> list[RouteTiming]:
    with environment_restored("DATABASE_URL", "REDIS_URL", "POWERTOOLS_METRICS_DISABLED"):
        os.environ.update(
            DATABASE_URL=app_url(url), REDIS_URL=redis_url, POWERTOOLS_METRICS_DISABLED="true"
        )
        from dispatch.config import settings
        from dispatch.ops import queries as ops_queries
        from dispatch.workers import locations
        from dispatch_local.events import LambdaContext
        from dispatch_local.invoke import Api
        from dispatch_local.template import handler_of

        settings.cache_clear()
        db.close()
        locations.client.cache_clear()
        build_city(url, redis_url)
        api = Api()
        with db.connect(url) as conn:  # a cursor in the middle of the stream, as one comes back
            middle = conn.execute(
                "SELECT tx::text AS tx, id::text AS id FROM job_events ORDER BY tx, id"
                " OFFSET (SELECT count(*) / 2 FROM job_events) LIMIT 1"
            ).fetchone()
        assert middle is not None
        position = (middle["tx"], middle["id"])
        paths = {
            "jobs": f"/ops/jobs?bbox={BBOX}",
            "workers": f"/ops/workers?bbox={BBOX}",
            "events": f"/ops/events?after={ops_queries.cursor_of(*position)}",
            "summary": "/ops/summary",
        }
        client = redis.Redis.from_url(redis_url)
        items: dict[str, int] = {}
        results: list[RouteTiming] = []
        with db.connect(url) as conn:
            bare = floors(conn, client, position)
            for name, path in paths.items():
                reply = api.call("GET", path, OPS)
                assert reply.status == 200, (path, reply.body)
                body = reply.body
                items[name] = len(body.get(name, body.get("jobs_by_status", {})))
                route, event = api.event("GET", path, OPS)
                handler = handler_of(route)
                context = LambdaContext(function_name=route.function)

                def through_handler(
                    h: Callable[..., Any] = handler, e: Any = event, c: Any = context
                ) -> None:
                    assert h(e, c)["statusCode"] == 200

                samples: dict[str, list[int]] = {"handler": [], "floor": []}
                for n in range(queries):
                    order = ("handler", "floor") if n % 2 == 0 else ("floor", "handler")
                    for side in order:
                        t0 = time.perf_counter_ns()
                        (through_handler if side == "handler" else bare[name])()
                        samples[side].append(time.perf_counter_ns() - t0)
                results.append(
                    RouteTiming(
                        name,
                        timing(samples["handler"], sum(samples["handler"]) / 1e9),
                        timing(samples["floor"], sum(samples["floor"]) / 1e9),
                        items[name],
                    )
                )
        db.close()
        locations.client.cache_clear()
    return results


ROUTES = {
    "jobs": "GET /ops/jobs (live jobs in the metro's box)",
    "workers": "GET /ops/workers (fresh positions in the box, idle or busy)",
    "events": "GET /ops/events?after= (a page of 100 from mid-stream)",
    "summary": "GET /ops/summary",
}


def report(results: list[RouteTiming], queries: int) -> str:
    lines = [
        f"The district after its rush: {WORKERS:,} workers with fresh positions, {JOBS:,} jobs"
        f" of the last two hours, their job events and {OFFERS_PER_JOB} offer events each;"
        f" {queries} calls per route and side, interleaved.",
        "",
        "| route | items answered | handler p50 ms | handler p99 ms | floor p50 ms |"
        " floor p99 ms | handler p99 x floor p99 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {ROUTES[r.route]} | {r.answer_items:,} | {r.handler.p50_ms:.2f} |"
            f" {r.handler.p99_ms:.2f} | {r.floor.p50_ms:.2f} | {r.floor.p99_ms:.2f} |"
            f" {r.ratio:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.ops", description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    queries = 10 if args.quick else args.queries
    redis_url = bench_redis()
    with bench_database() as url:
        results = measure(url, redis_url, queries)
    text = report(results, queries)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ops.md").write_text(text + "\n")
    (RESULTS / "ops.json").write_text(json.dumps([asdict(r) for r in results], default=str))


if __name__ == "__main__":
    main()
