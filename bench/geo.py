"""Geo benchmarks, side by side in one run.

    make bench-geo               (or: python -m bench.geo [--quick] [--jobs 1000000])

1. Nearby search at N open jobs (80% in a 40 x 40 km metro, 20% spread over a country):
   our H3-cell query (the very SQL of GET /jobs/nearby) against PostGIS on the same rows
   (geography column, GiST index, ST_DWithin + ORDER BY ST_Distance), p50/p99 of the query
   in the database (timed around the statement, cells computed off the clock, and that cost
   reported apart). PostGIS is installed for the benchmark only; where the server lacks it
   (the embedded one), that side is reported as missing.
2. Location updates per second through the real handler (in-process, events built off the
   clock) against a bare GEOADD loop on the same Redis.
"""

import argparse
import json
import os
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg
import redis

from bench.common import Timing, bench_database, timing
from dispatch import db, geo
from dispatch import locations as dispatch_locations
from dispatch.config import settings
from dispatch.jobs import queries as job_queries

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


@dataclass
class LocationReport:
    updates: int
    handler_per_second: float
    geoadd_per_second: float


def locations(redis_url: str, updates: int) -> LocationReport:
    from dispatch_local.events import LambdaContext, http_api_event
    from dispatch_local.template import find, handler_of, routes
    from dispatch_local.tokens import as_api_gateway_claims

    if os.environ.get("REDIS_URL") != redis_url:  # the handler reads its Redis from settings
        os.environ["REDIS_URL"] = redis_url
        settings.cache_clear()
        dispatch_locations.client.cache_clear()
    route, params = find(routes(), "PUT", "/workers/me/location")  # type: ignore[misc]
    handler = handler_of(route)
    rng = random.Random(3)
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
                [("content-type", "application/json"), ("idempotency-key", f"k-{n}")],
                json.dumps({"lat": lat, "lng": lng}).encode(),
                as_api_gateway_claims({"sub": f"w-{n % 100_000}", "cognito:groups": ["worker"]}),
            )
        )
    context = LambdaContext(function_name=route.function)
    handler(events[0], context)  # connect and warm up off the clock
    t0 = time.perf_counter()
    for event in events:
        answer = handler(event, context)
        assert answer["statusCode"] == 204, answer
    through_handler = updates / (time.perf_counter() - t0)

    client = redis.Redis.from_url(redis_url)
    points = [random_point(rng) for _ in range(updates)]
    t0 = time.perf_counter()
    for n, (lat, lng) in enumerate(points):
        client.geoadd("bench:positions", (lng, lat, f"w-{n % 100_000}"))
    bare = updates / (time.perf_counter() - t0)
    client.delete("bench:positions")
    return LocationReport(updates, through_handler, bare)


def report(n: NearbyReport, loc: LocationReport) -> str:
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
    lines += [
        "",
        "| location updates | per second | x bare GEOADD |",
        "| --- | ---: | ---: |",
        f"| through the handler (in-process) | {loc.handler_per_second:,.0f} | "
        f"{loc.handler_per_second / loc.geoadd_per_second:.2f} |",
        f"| bare GEOADD loop | {loc.geoadd_per_second:,.0f} | 1.00 |",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.geo", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    jobs, queries, updates = (
        (2_000, 20, 200) if args.quick else (args.jobs, args.queries, args.updates)
    )
    redis_url = os.environ.get("REDIS_URL")
    if not redis_url:
        from dispatch_local import embedded, home

        redis_url = embedded.redis(home())
    with bench_database() as url:
        near = nearby(url, jobs, queries)
    loc = locations(redis_url, updates)
    text = report(near, loc)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "geo.md").write_text(text + "\n")
    (RESULTS / "geo.json").write_text(
        json.dumps({"nearby": asdict(near), "locations": asdict(loc)}, default=str)
    )


if __name__ == "__main__":
    main()
