"""Geo benchmarks, side by side in one run.

    make bench-geo               (or: python -m bench.geo [--quick] [--sizes 100000,300000,1000000])

1. Nearby search at N open jobs (80% in a 40 x 40 km metro, 20% spread over a country):
   our H3-cell query (the very SQL of GET /jobs/nearby) against PostGIS on the same rows
   (geography column, GiST index, ST_DWithin + ORDER BY ST_Distance), p50/p99 of the query
   in the database (timed around the statement, cells computed off the clock, and that cost
   reported apart). PostGIS is installed for the benchmark only; where the server lacks it
   (the embedded one), that side is reported as missing.
2. Location updates per second through the real handler (each process one Lambda environment,
   events built off the clock), 1, 2 and 4 processes at once, against bare GEOADD loops in as
   many processes on the same Redis.
"""

import argparse
import json
import multiprocessing
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis

from bench.common import Timing, bench_database, timing
from dispatch import db
from dispatch.jobs import geo
from dispatch.jobs import queries as job_queries
from dispatch.workers import locations as dispatch_locations

RESULTS = Path(__file__).parent / "results"
METRO = (12.97, 77.59)  # the metro's centre; its box is 40 x 40 km
COUNTRY = ((8.0, 30.0), (68.0, 90.0))  # lat and lng ranges
KM_PER_DEG = 111.32


def random_point(rng: random.Random) -> tuple[float, float]:
    if rng.random() < 0.8:
        lat = METRO[0] + rng.uniform(-20, 20) / KM_PER_DEG
        lng = METRO[1] + rng.uniform(-20, 20) / (KM_PER_DEG * 0.974)  # cos(12.97 deg)
        return lat, lng
    return rng.uniform(*COUNTRY[0]), rng.uniform(*COUNTRY[1])


def load(url: str, jobs: int, seed: int = 7) -> bool:
    """N open jobs with their cells; the PostGIS twin table when the server has PostGIS."""
    rng = random.Random(seed)
    with db.connect(url) as conn:
        conn.execute("SET statement_timeout = 0")  # loading a million rows is not a request
        conn.execute("TRUNCATE jobs, job_events CASCADE")
        columns = "business_id, lat, lng, skills, window_start, window_end, " + ", ".join(
            f"cell_r{r}" for r in geo.RESOLUTIONS
        )
        with conn.cursor().copy(f"COPY jobs ({columns}) FROM STDIN") as copy:
            for _ in range(jobs):
                lat, lng = random_point(rng)
                cells = geo.cells_of(lat, lng)
                copy.write_row(
                    (
                        "b-1",
                        lat,
                        lng,
                        "{}",
                        "2030-01-01T09:00Z",
                        "2030-01-01T11:00Z",
                        *(cells[f"cell_r{r}"] for r in geo.RESOLUTIONS),
                    )
                )
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


POSTGIS_NEARBY = """
SELECT id, ST_Distance(geog, ST_SetSRID(ST_MakePoint(%(lng)s, %(lat)s), 4326)::geography) AS d
  FROM jobs_postgis
 WHERE status = 'open'
   AND ST_DWithin(geog, ST_SetSRID(ST_MakePoint(%(lng)s, %(lat)s), 4326)::geography, %(radius_m)s)
 ORDER BY d
 LIMIT %(limit)s
"""


@dataclass
class NearbyReport:
    jobs: int
    queries: int
    ours: Timing
    postgis: Timing | None
    mean_results: float


def nearby(
    url: str, jobs: int, queries: int, radius_m: float = 3_000, limit: int = 50
) -> NearbyReport:
    has_postgis = load(url, jobs)
    rng = random.Random(11)
    points = [random_point(rng) for _ in range(queries)]
    ours: list[int] = []
    theirs: list[int] = []
    results = 0
    with db.connect(url) as conn:
        for round_ in range(2):  # interleaved: A B, then B A
            for lat, lng in points:
                params = {"lat": lat, "lng": lng, "radius_m": radius_m, "limit": limit}
                order = ("ours", "postgis") if round_ == 0 else ("postgis", "ours")
                for side in order:
                    if side == "postgis" and not has_postgis:
                        continue
                    t0 = time.perf_counter_ns()
                    if side == "ours":  # all of it: cells, the band queries, the rows
                        results += len(
                            job_queries.nearby_jobs(conn, "w", lat, lng, radius_m, limit).jobs
                        )
                    else:
                        conn.execute(POSTGIS_NEARBY, params).fetchall()
                    (ours if side == "ours" else theirs).append(time.perf_counter_ns() - t0)
    return NearbyReport(
        jobs=jobs,
        queries=len(ours),
        ours=timing(ours, sum(ours) / 1e9),
        postgis=timing(theirs, sum(theirs) / 1e9) if theirs else None,
        mean_results=results / len(ours),
    )


@dataclass(frozen=True)
class LocationRun:
    processes: int
    handler_per_second: float
    geoadd_per_second: float


@dataclass(frozen=True)
class LocationReport:
    updates: int  # per process and side
    runs: list[LocationRun]


def _location_events(updates: int, seed: int) -> list[dict[str, Any]]:
    from dispatch_local.events import http_api_event
    from dispatch_local.template import find, routes
    from dispatch_local.tokens import as_api_gateway_claims

    route, params = find(routes(), "PUT", "/workers/me/location")  # type: ignore[misc]
    rng = random.Random(seed)
    events = []
    for n in range(updates):
        lat, lng = random_point(rng)
        events.append(
            http_api_event(
                route,
                params,
                "PUT",
                "/workers/me/location",
                "",
                [("content-type", "application/json"), ("idempotency-key", f"k-{seed}-{n}")],
                json.dumps({"lat": lat, "lng": lng}).encode(),
                as_api_gateway_claims(
                    {"sub": f"w-{seed}-{n % 10_000}", "cognito:groups": ["worker"]}
                ),
            )
        )
    return events


def _update_locations(
    redis_url: str, updates: int, seed: int, side: str, barrier: Any
) -> tuple[float, float]:
    """One process's share: `updates` location reports through the real handler (a Lambda
    environment of its own) or as bare GEOADDs; (start, end) on the shared monotonic clock."""
    os.environ["REDIS_URL"] = redis_url
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    from dispatch_local.events import LambdaContext
    from dispatch_local.template import find, handler_of, routes

    if side == "handler":
        route, _ = find(routes(), "PUT", "/workers/me/location")  # type: ignore[misc]
        handler, context = handler_of(route), LambdaContext(function_name=route.function)
        events = _location_events(updates, seed)
        handler(events[0], context)  # connect and warm up off the clock
        barrier.wait()
        began = time.monotonic()
        for event in events:
            answer = handler(event, context)
            assert answer["statusCode"] == 204, answer
    else:
        client = redis.Redis.from_url(redis_url)
        rng = random.Random(seed)
        points = [random_point(rng) for _ in range(updates)]
        client.ping()
        barrier.wait()
        began = time.monotonic()
        for n, (lat, lng) in enumerate(points):
            client.geoadd("bench:positions", (lng, lat, f"w-{seed}-{n % 10_000}"))
    return began, time.monotonic()


def _updates_per_second(redis_url: str, updates: int, processes: int, side: str) -> float:
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager, ProcessPoolExecutor(processes, mp_context=context) as pool:
        barrier = manager.Barrier(processes)
        spans = list(
            pool.map(
                _update_locations,
                [redis_url] * processes,
                [updates] * processes,
                range(processes),
                [side] * processes,
                [barrier] * processes,
            )
        )
    wall = max(end for _, end in spans) - min(began for began, _ in spans)
    return processes * updates / wall


def locations(redis_url: str, updates: int, processes: Sequence[int]) -> LocationReport:
    """Location updates per second with 1, 2, 4 ... processes reporting at once, through the
    handler and, as the baseline, bare GEOADDs with as many processes on the same Redis."""
    runs = [
        LocationRun(
            n,
            _updates_per_second(redis_url, updates, n, "handler"),
            _updates_per_second(redis_url, updates, n, "geoadd"),
        )
        for n in processes
    ]
    client = redis.Redis.from_url(redis_url)
    client.delete("bench:positions")
    bench_workers = [f"w-{p}-{i}" for p in range(max(processes)) for i in range(10_000)]
    for key in (dispatch_locations.POSITIONS, dispatch_locations.LAST_SEEN):
        client.zrem(key, *bench_workers)
    return LocationReport(updates, runs)


def report(n: NearbyReport, loc: LocationReport, by_size: Sequence[NearbyReport] = ()) -> str:
    lines = [
        f"Nearby: {n.jobs:,} open jobs (80% in a 40 x 40 km metro), {n.queries} queries at 3 km,"
        f" limit 50, {n.mean_results:.1f} results on average. Ours is timed whole (cells,"
        " every band query, the rows); PostGIS is one statement.",
        "",
        "| nearby query (in the database) | p50 ms | p99 ms | x PostGIS p99 |",
        "| --- | ---: | ---: | ---: |",
    ]
    base = n.postgis.p99_ms if n.postgis else None
    lines.append(
        f"| H3 cells + haversine (ours) | {n.ours.p50_ms:.2f} | {n.ours.p99_ms:.2f} | "
        + (f"{n.ours.p99_ms / base:.2f} |" if base else "n/a |")
    )
    if n.postgis:
        theirs = n.postgis
        lines.append(
            f"| PostGIS GiST, ST_DWithin + ST_Distance | {theirs.p50_ms:.2f} "
            f"| {theirs.p99_ms:.2f} | 1.00 |"
        )
    else:
        lines.append("| PostGIS | (not available on this server) | | |")
    if len(by_size) > 1:
        lines += [
            "",
            "By data size (the same queries on fresh loads of each size):",
            "",
            "| open jobs | ours p50 ms | ours p99 ms | PostGIS p50 ms | PostGIS p99 ms |"
            " x PostGIS p99 |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in by_size:
            theirs = r.postgis
            lines.append(
                f"| {r.jobs:,} | {r.ours.p50_ms:.2f} | {r.ours.p99_ms:.2f} | "
                + (
                    f"{theirs.p50_ms:.2f} | {theirs.p99_ms:.2f} | "
                    f"{r.ours.p99_ms / theirs.p99_ms:.2f} |"
                    if theirs
                    else "n/a | n/a | n/a |"
                )
            )
    lines += [
        "",
        f"Location updates: {loc.updates:,} per process, each process a Lambda environment of its"
        " own (the real handler, events built off the clock) or a bare GEOADD loop, all released"
        " at once on the same Redis.",
        "",
        "| processes | through the handler /s | bare GEOADD /s | x bare GEOADD |",
        "| ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {r.processes} | {r.handler_per_second:,.0f} | {r.geoadd_per_second:,.0f} | "
        f"{r.handler_per_second / r.geoadd_per_second:.2f} |"
        for r in loc.runs
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.geo", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="100000,300000,1000000", help="open jobs, one fresh load each"
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--updates", type=int, default=20_000, help="per process")
    parser.add_argument("--processes", default="1,2,4", help="reporting processes, per run")
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    sizes, queries, updates = (
        ([1_000, 2_000], 20, 200)
        if args.quick
        else ([int(n) for n in args.sizes.split(",")], args.queries, args.updates)
    )
    processes = [1, 2] if args.quick else [int(n) for n in args.processes.split(",")]
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        from dispatch_local import embedded, home

        redis_url = embedded.redis(home())
    with bench_database() as url:
        by_size = [nearby(url, jobs, queries) for jobs in sizes]
    loc = locations(redis_url, updates, processes)
    near = by_size[-1]
    text = report(near, loc, by_size)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "geo.md").write_text(text + "\n")
    (RESULTS / "geo.json").write_text(
        json.dumps(
            {
                "nearby": asdict(near),
                "nearby_by_size": [asdict(r) for r in by_size],
                "locations": asdict(loc),
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
