"""Geo benchmarks, side by side in one run.

    make bench-geo               (or: python -m bench.geo [--quick] [--sizes 100000,300000,1000000])

1. Nearby search at N open jobs (80% in a 40 x 40 km metro, 20% spread over a country), half
   the queries in the metro (dense) and half in the country (sparse), 3 km, limit 50. Ours is
   the very statement of GET /jobs/nearby (core Postgres's GiST on `point`, exact re-rank),
   timed whole: everything the route runs in the database, its documents included. Against
   PostGIS on the same rows (a geography column and its GiST index), as PostGIS's own experts
   would write it: the KNN index walk (`ORDER BY geog <-> p LIMIT n`), in both forms, since
   the planner does not always walk the index when ST_DWithin shares the statement; the faster
   at each size is the baseline. The `ORDER BY ST_Distance` form is a further row. PostGIS
   measures on the sphere (use_spheroid false), the question ours answers; every query's
   answers are compared (same ids, same order, distances within 0.1 m). PostGIS is installed
   for the benchmark only; where the server lacks it, that side is reported as missing.
2. Location updates: the handler's CPU per update (in process, warm) against a bare redis-py
   GEOADD plus ZADD on one pair of keys (the least a position needs) in the same run; each
   worker moves about 55 m between its reports, so some reports change cell.
"""

import argparse
import json
import os
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import redis
from psycopg.types.string import TextLoader

from bench.common import Timing, bench_database, bench_redis, one, timing
from dispatch import db
from dispatch.config import settings
from dispatch.jobs import sql as job_sql
from dispatch_local import environment_restored

RESULTS = Path(__file__).parent / "results"
METRO = (12.97, 77.59)  # the metro's centre; its box is 40 x 40 km
COUNTRY = ((8.0, 30.0), (68.0, 90.0))  # lat and lng ranges
KM_PER_DEG = 111.32
RADIUS_M = 3_000
LIMIT = 50
PLACES = ("dense", "sparse")


def metro_point(rng: random.Random) -> tuple[float, float]:
    lat = METRO[0] + rng.uniform(-20, 20) / KM_PER_DEG
    lng = METRO[1] + rng.uniform(-20, 20) / (KM_PER_DEG * 0.974)  # cos(12.97 deg)
    return lat, lng


def country_point(rng: random.Random) -> tuple[float, float]:
    return rng.uniform(*COUNTRY[0]), rng.uniform(*COUNTRY[1])


def random_point(rng: random.Random) -> tuple[float, float]:
    return metro_point(rng) if rng.random() < 0.8 else country_point(rng)


def load(url: str, jobs: int, seed: int = 7) -> bool:
    """N open jobs, their windows open for a day from now; the PostGIS twin table (the same
    ids and places) when the server has PostGIS."""
    rng = random.Random(seed)
    with db.connect(url) as conn:
        conn.execute("SET statement_timeout = 0")  # loading a million rows is not a request
        conn.execute("TRUNCATE jobs, job_events CASCADE")
        columns = "business_id, lat, lng, skills, window_start, window_end"
        start = one(conn.execute("SELECT now() - interval '1 hour' AS t"))["t"]
        end = one(conn.execute("SELECT now() + interval '1 day' AS t"))["t"]
        with conn.cursor().copy(f"COPY jobs ({columns}) FROM STDIN") as copy:
            for _ in range(jobs):
                copy.write_row(("b-1", *random_point(rng), "{}", start, end))
        conn.execute("VACUUM ANALYZE jobs")
        try:
            conn.execute("CREATE EXTENSION IF NOT EXISTS postgis")
        except psycopg.Error:
            return False
        conn.execute("DROP TABLE IF EXISTS jobs_postgis")
        conn.execute(
            "CREATE TABLE jobs_postgis AS SELECT id, status, "
            "ST_SetSRID(ST_MakePoint(lng, lat), 4326)::geography AS geog FROM jobs"
        )
        conn.execute("CREATE INDEX ON jobs_postgis USING gist (geog) WHERE status = 'open'")
        conn.execute("VACUUM ANALYZE jobs_postgis")
        return True


# PostGIS on the sphere (use_spheroid false): the question ours answers, and its faster form.
_POINT = "ST_SetSRID(ST_MakePoint(%(lng)s, %(lat)s), 4326)::geography"
POSTGIS: dict[str, str] = {
    # The index walked in distance order, the radius applied to the walk's first n.
    "PostGIS KNN, radius after": f"""
SELECT id, d FROM (
    SELECT id, geog <-> {_POINT} AS d
      FROM jobs_postgis
     WHERE status = 'open'
     ORDER BY geog <-> {_POINT}
     LIMIT %(limit)s) nearest
 WHERE d <= %(radius_m)s
 ORDER BY d""",
    # The index walked in distance order with the radius in the same statement.
    "PostGIS KNN + DWithin": f"""
SELECT id, geog <-> {_POINT} AS d
  FROM jobs_postgis
 WHERE status = 'open'
   AND ST_DWithin(geog, {_POINT}, %(radius_m)s, false)
 ORDER BY geog <-> {_POINT}
 LIMIT %(limit)s""",
    # Every row in the radius measured, then sorted: what this benchmark once compared with.
    "PostGIS ORDER BY ST_Distance (no index walk)": f"""
SELECT id, ST_Distance(geog, {_POINT}, false) AS d
  FROM jobs_postgis
 WHERE status = 'open'
   AND ST_DWithin(geog, {_POINT}, %(radius_m)s, false)
 ORDER BY d
 LIMIT %(limit)s""",
}
KNN_FORMS = ("PostGIS KNN, radius after", "PostGIS KNN + DWithin")
OURS = (
    "ours: core GiST on point, walked until proved (the route's statement, its Job documents too)"
)


@dataclass
class Side:
    name: str
    by_place: dict[str, Timing]
    disagreements: int = 0  # queries whose answer differs from ours (ids, order, 0.1 m)


@dataclass
class NearbyReport:
    jobs: int
    queries: int  # per place
    sides: list[Side]
    mean_results: dict[str, float] = field(default_factory=dict)

    def side(self, name: str) -> Side | None:
        return next((s for s in self.sides if s.name == name), None)

    def baseline(self, place: str) -> Side | None:
        """The faster (by p99) of PostGIS's two KNN forms at this size and place."""
        knn = [s for s in self.sides if s.name in KNN_FORMS]
        return min(knn, key=lambda s: s.by_place[place].p99_ms) if knn else None


def agree(ours: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> bool:
    """Same ids in the same order, each distance within 0.1 m."""
    return len(ours) == len(theirs) and all(
        a == b and abs(da - db) <= 0.1 for (a, da), (b, db) in zip(ours, theirs, strict=True)
    )


def nearby(url: str, jobs: int, queries: int) -> NearbyReport:
    """`queries` points in the metro and as many in the country, each asked of every side,
    the sides' order rotated from one point to the next (interleaved on the same data)."""
    has_postgis = load(url, jobs)
    rng = random.Random(11)
    points = [
        (place, (metro_point if place == "dense" else country_point)(rng))
        for place in PLACES
        for _ in range(queries)
    ]
    rng.shuffle(points)
    statements = {OURS: job_sql.NEARBY_JOBS.sql} | (POSTGIS if has_postgis else {})
    names = list(statements)
    latencies: dict[str, dict[str, list[int]]] = {n: {p: [] for p in PLACES} for n in names}
    disagreements = dict.fromkeys(names, 0)
    results = dict.fromkeys(PLACES, 0)
    with psycopg.connect(url, autocommit=True, prepare_threshold=None) as conn:
        # Results come as text, undecoded, on every side alike: what is timed is the
        # database's work and the wire, not the client's parsing. Nothing is prepared (the
        # route prepares nothing either: RDS Proxy would pin the session).
        for oid in ("jsonb", "json", "uuid", "float8"):
            conn.adapters.register_loader(oid, TextLoader)
        for n, (place, (lat, lng)) in enumerate(points):
            params = {
                "lat": lat,
                "lng": lng,
                "radius_m": RADIUS_M,
                "limit": LIMIT,
                "worker_id": "w",
            }
            answers = {}
            for name in names[n % len(names) :] + names[: n % len(names)]:
                t0 = time.perf_counter_ns()
                rows = conn.execute(statements[name], params).fetchall()
                latencies[name][place].append(time.perf_counter_ns() - t0)
                answers[name] = [
                    (json.loads(key)["id"] if name == OURS else key, float(metres))
                    for key, metres in rows
                ]
            results[place] += len(answers[OURS])
            for name in names:
                disagreements[name] += not agree(answers[OURS], answers[name])
    sides = [
        Side(
            name,
            {p: timing(latencies[name][p], sum(latencies[name][p]) / 1e9) for p in PLACES},
            disagreements[name],
        )
        for name in names
    ]
    return NearbyReport(jobs, queries, sides, {p: results[p] / queries for p in PLACES})


@dataclass(frozen=True)
class LocationReport:
    updates: int  # per block; blocks alternate handler, bare, bare, handler, ...
    blocks: int
    handler_cpu_us: float  # median over blocks of CPU time per update, this process
    bare_cpu_us: float
    handler_wall_us: float
    bare_wall_us: float

    @property
    def ratio(self) -> float:
        return self.handler_cpu_us / self.bare_cpu_us


def _walks(updates: int) -> list[tuple[str, float, float]]:
    """(worker, lat, lng) of each update: 1,000 workers, each starting somewhere (mostly in the
    metro) and moving about 55 m north-east between its reports, as a courier between stops
    does in 30 s; so a report now and then takes its worker into another cell."""
    rng = random.Random(5)
    starts = [random_point(rng) for _ in range(1_000)]
    step = 0.0005
    return [
        (f"bench-w-{n % 1_000}", starts[n % 1_000][0] + step * (n // 1_000),
         starts[n % 1_000][1] + step * (n // 1_000))
        for n in range(updates)
    ]  # fmt: skip


def _location_events(walks: list[tuple[str, float, float]]) -> list[dict[str, Any]]:
    from dispatch_local.events import http_api_event
    from dispatch_local.template import find, routes
    from dispatch_local.tokens import as_api_gateway_claims

    route, params = find(routes(), "PUT", "/workers/me/location")  # type: ignore[misc]
    return [
        http_api_event(
            route,
            params,
            "PUT",
            "/workers/me/location",
            "",
            [("content-type", "application/json"), ("idempotency-key", f"k-{n}")],
            json.dumps({"lat": lat, "lng": lng}).encode(),
            as_api_gateway_claims({"sub": worker_id, "cognito:groups": ["worker"]}),
        )
        for n, (worker_id, lat, lng) in enumerate(walks)
    ]


def locations(redis_url: str, updates: int, blocks: int = 6) -> LocationReport:
    """CPU per location update in this process, warm: the real handler (the function's own
    module, its validation, auth and answer, its cell's writes and its own key) against bare
    redis-py writing the least a position needs (GEOADD and ZADD on one pair of keys, pipelined:
    the layout before cells), on the same Redis. Blocks alternate A B B A."""
    with environment_restored(
        "REDIS_URL", "POWERTOOLS_METRICS_DISABLED", "DISPATCH_REDIS_NAMESPACE"
    ):
        os.environ["REDIS_URL"] = redis_url
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # stdout is not measured
        os.environ["DISPATCH_REDIS_NAMESPACE"] = "bench-geo"  # its own keys, forgotten after
        settings.cache_clear()  # read again, with this Redis
        try:
            return _locations(redis_url, updates, blocks)
        finally:
            settings.cache_clear()


def _locations(redis_url: str, updates: int, blocks: int) -> LocationReport:
    from dispatch.workers import locations as dispatch_locations
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import find, handler_of, routes

    route, _ = find(routes(), "PUT", "/workers/me/location")  # type: ignore[misc]
    handler, context = handler_of(route), LambdaContext(function_name=route.function)
    walks = _walks(updates)
    events = _location_events(walks)
    client = redis.Redis.from_url(redis_url)

    def through_handler() -> None:
        for event in events:
            handler(event, context)

    def bare() -> None:
        for worker_id, lat, lng in walks:
            pipe = client.pipeline(transaction=False)
            pipe.geoadd("bench:positions", (lng, lat, worker_id))
            pipe.zadd("bench:seen", {worker_id: time.time()})
            pipe.execute()

    answer = handler(events[0], context)  # connect and warm up off the clock
    assert answer["statusCode"] == 204, answer
    bare()
    cpu: dict[str, list[float]] = {"handler": [], "bare": []}
    wall: dict[str, list[float]] = {"handler": [], "bare": []}
    for block in range(blocks):
        for side in ("handler", "bare") if block % 2 == 0 else ("bare", "handler"):
            c0, w0 = time.process_time_ns(), time.perf_counter_ns()
            (through_handler if side == "handler" else bare)()
            cpu[side].append((time.process_time_ns() - c0) / 1e3 / updates)
            wall[side].append((time.perf_counter_ns() - w0) / 1e3 / updates)
    client.delete("bench:positions", "bench:seen")
    dispatch_locations.forget_everyone(client)
    return LocationReport(
        updates,
        blocks,
        statistics.median(cpu["handler"]),
        statistics.median(cpu["bare"]),
        statistics.median(wall["handler"]),
        statistics.median(wall["bare"]),
    )


def report(by_size: Sequence[NearbyReport], loc: LocationReport) -> str:
    first = by_size[0]
    lines = [
        f"Nearby: {first.queries} queries in the dense metro and {first.queries} in the sparse"
        f" country at each size, {RADIUS_M / 1000:g} km, limit {LIMIT}, every side asked every"
        " query in rotating order on the same data. The baseline (x 1.00) at each size and"
        " place is the faster by p99 of PostGIS's two KNN forms.",
        "",
        "| open jobs | place | query | p50 ms | p99 ms | x best PostGIS KNN p99 |"
        " answers differing from ours |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in by_size:
        for place in PLACES:
            base = r.baseline(place)
            for side in r.sides:
                t = side.by_place[place]
                ratio = f"{t.p99_ms / base.by_place[place].p99_ms:.2f}" if base else "n/a"
                lines.append(
                    f"| {r.jobs:,} | {place} | {side.name} | {t.p50_ms:.2f} | {t.p99_ms:.2f} |"
                    f" {ratio} | {side.disagreements if side.name != OURS else '-'} |"
                )
            if base is None:
                lines.append(
                    f"| {r.jobs:,} | {place} | PostGIS | (not available on this server) | | | |"
                )
    lines += [
        "",
        "Answers: "
        + ", ".join(
            f"{r.jobs:,} jobs: {r.mean_results['dense']:.1f} dense, {r.mean_results['sparse']:.1f}"
            " sparse on average"
            for r in by_size
        )
        + ". A differing answer is any query where a side's ids, their order or a distance"
        " (beyond 0.1 m) is not ours; every side is asked every query (counted per side over"
        " both places).",
        "",
        f"Location updates: CPU in this process per update, warm, median of {loc.blocks} blocks"
        f" of {loc.updates:,} (alternating). The handler is the route's own function (parse,"
        " validate, auth, its own key and its cell's two sets in one round trip, a second when"
        " the worker changed cell, the answer); the baseline is bare redis-py sending a GEOADD"
        " and a ZADD to one pair of keys in one pipelined round trip (the least a position"
        " needs). Each worker moves about 55 m between its reports.",
        "",
        "| location update | CPU us per update | wall us per update | x bare CPU |",
        "| --- | ---: | ---: | ---: |",
        f"| through the handler | {loc.handler_cpu_us:.0f} | {loc.handler_wall_us:.0f} |"
        f" {loc.ratio:.2f} |",
        f"| bare GEOADD + ZADD (redis-py pipeline) | {loc.bare_cpu_us:.0f} |"
        f" {loc.bare_wall_us:.0f} | 1.00 |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.geo", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="100000,300000,1000000", help="open jobs, one fresh load each"
    )
    parser.add_argument("--queries", type=int, default=1000, help="per place (dense, sparse)")
    parser.add_argument("--updates", type=int, default=5_000, help="location updates per block")
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    sizes, queries, updates = (
        ([1_000, 2_000], 10, 200)
        if args.quick
        else ([int(n) for n in args.sizes.split(",")], args.queries, args.updates)
    )
    redis_url = bench_redis()
    with bench_database() as url:
        by_size = [nearby(url, jobs, queries) for jobs in sizes]
    loc = locations(redis_url, updates)
    text = report(by_size, loc)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "geo.md").write_text(text + "\n")
    (RESULTS / "geo.json").write_text(
        json.dumps(
            {"nearby_by_size": [asdict(r) for r in by_size], "locations": asdict(loc)},
            default=str,
        )
    )


if __name__ == "__main__":
    main()
