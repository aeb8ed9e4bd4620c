"""GET /jobs/nearby: exact at the edge, right across the antimeridian and near the poles,
nearest first, qualified and open only, in one statement through core Postgres's
nearest-neighbour index (no extension)."""

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dispatch import db
from dispatch.db import Connection
from dispatch.jobs import commands, queries
from dispatch.jobs.requests import CreateJob, Location
from dispatch_local.wire import traced
from tests.conftest import empty_the_tables
from tests.support import EARTH_M, Api, destination, job_body, make_worker, walk_to, worker

WASHER = worker("washer")


def haversine(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((p2 - p1) / 2) ** 2
        + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * EARTH_M * math.asin(min(1.0, math.sqrt(a)))


def job_at(conn: Connection, lat: float, lng: float, skills: list[str] | None = None) -> str:
    """A job at any latitude. POST /jobs takes only those where worker positions can be (within
    85.05 degrees, tests/integration/test_service_area.py), but nearby search must be right
    for every row, polar ones included (posted before that rule, or by hand)."""
    spec = CreateJob.model_validate({**job_body(), "skills": skills or []})
    spec.location = Location.model_construct(lat=lat, lng=lng)
    return str(commands.create_job(conn, "business-1", spec).id)


def nearby(api: Api, lat: float | str, lng: float | str, **params: Any) -> Any:
    query = "&".join(f"{k}={v}" for k, v in {"lat": lat, "lng": lng, **params}.items())
    return api.call("GET", f"/jobs/nearby?{query}", WASHER, key=None)


@pytest.mark.parametrize(
    ("lat", "lng"),
    [
        (12.9716, 77.5946),
        (0.0, 179.999),
        (0.0, -179.999),
        (89.98, 10.0),
        (-89.98, -170.0),
        (60.0, 0.0),
    ],
)
def test_exact_at_the_edge_everywhere(api: Api, conn: Connection, lat: float, lng: float) -> None:
    make_worker(api, WASHER, ["wash"])
    inside = [job_at(conn, *destination(lat, lng, b, 2_900)) for b in (0, 90, 180, 270, 45)]
    outside = [job_at(conn, *destination(lat, lng, b, 3_100)) for b in (0, 90, 180, 270, 45)]
    reply = nearby(api, lat, lng)
    assert reply.status == 200, reply.body
    found = [j["id"] for j in reply.body["jobs"]]
    assert sorted(found) == sorted(inside)
    assert not set(found) & set(outside)
    assert all(2_850 < j["distance_m"] < 2_950 for j in reply.body["jobs"])


def test_across_the_antimeridian_both_ways(api: Api, conn: Connection) -> None:
    make_worker(api, WASHER)
    east = job_at(conn, 0.0, 179.99)
    west = job_at(conn, 0.0, -179.99)
    for lng in (179.995, -179.995):
        found = {j["id"] for j in nearby(api, 0.0, lng).body["jobs"]}
        assert found == {east, west}


def test_nearest_first_with_distances(api: Api, conn: Connection) -> None:
    make_worker(api, WASHER)
    far, near, middle = (job_at(conn, *destination(10, 10, 30, m)) for m in (2_500, 300, 1_200))
    jobs = nearby(api, 10, 10).body["jobs"]
    assert [j["id"] for j in jobs] == [near, middle, far]
    assert [round(j["distance_m"], -2) for j in jobs] == [300, 1_200, 2_500]
    assert set(jobs[0]) >= {"id", "status", "version", "location", "distance_m"}


def test_only_open_jobs_the_worker_is_qualified_for(api: Api, conn: Connection) -> None:
    make_worker(api, WASHER, ["wash"])
    open_wash = job_at(conn, 10.0, 10.001, ["wash"])
    job_at(conn, 10.0, 10.002, ["wash", "wax"])  # needs a skill the washer lacks
    taken = walk_to(api, "assigned", holder=worker("other"))  # at the default test location
    found = {j["id"] for j in nearby(api, 10.0, 10.0).body["jobs"]}
    assert found == {open_wash}
    near_taken = {j["id"] for j in nearby(api, 12.9716, 77.5946).body["jobs"]}
    assert taken["id"] not in near_taken


def test_wide_searches_stay_exact(api: Api, conn: Connection) -> None:
    make_worker(api, WASHER)
    inside = job_at(conn, *destination(45, 7, 120, 39_000))
    job_at(conn, *destination(45, 7, 300, 41_000))
    found = [j["id"] for j in nearby(api, 45, 7, radius_m=40_000).body["jobs"]]
    assert found == [inside]


def test_limit_and_radius_bounds(api: Api, conn: Connection) -> None:
    make_worker(api, WASHER)
    for n in range(5):
        job_at(conn, *destination(10, 10, n * 70, 100 + n))
    assert len(nearby(api, 10, 10, limit=3).body["jobs"]) == 3
    for bad in ({"radius_m": 50_001}, {"radius_m": 0}, {"limit": 201}, {"limit": 0}):
        reply = nearby(api, 10, 10, **bad)
        assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), bad
    for lat, lng in ((91, 0), (0, 181), ("nan", 0), ("x", 0)):
        assert nearby(api, lat, lng).status == 400
    business = api.call("GET", "/jobs/nearby?lat=1&lng=1", ("business-1", "business"), key=None)
    assert business.status == 403


def index_reads(conn: Connection) -> int:
    """Index entries of open jobs read so far (the server's own count, flushed first)."""
    conn.execute("SELECT pg_stat_force_next_flush()")
    conn.execute("SELECT pg_stat_clear_snapshot()")
    row = conn.execute(
        "SELECT idx_tup_read FROM pg_stat_user_indexes WHERE indexrelname = 'jobs_open_mercator'"
    ).fetchone()
    assert row is not None
    return int(row["idx_tup_read"])


def fill_city(conn: Connection, jobs: int = 3_000) -> None:
    for n in range(jobs):
        job_at(conn, *destination(12.97, 77.59, (n * 37) % 360, (n * 97) % 6_000))
    conn.execute("ANALYZE jobs")


def test_a_dense_place_is_answered_by_a_short_walk(conn: Connection) -> None:
    """The index is walked from the point and the walk stops once the answer is proved: it
    reads about as many jobs as it returns, not the hundreds the circle holds."""
    fill_city(conn)
    in_circle = sum(
        1
        for row in conn.execute("SELECT lat, lng FROM jobs").fetchall()
        if haversine(12.97, 77.59, row["lat"], row["lng"]) <= 3_000
    )
    before = index_reads(conn)
    found = queries.nearby_jobs(conn, "w", 12.97, 77.59, 3_000, 50).jobs
    read = index_reads(conn) - before
    assert len(found) == 50 and in_circle > 600
    assert read < 80, (read, in_circle)


def test_one_statement_dense_or_sparse(conn: Connection) -> None:
    """One round trip in a dense city and in open country alike (counted on the wire)."""
    fill_city(conn, 500)
    far = job_at(conn, *destination(30.0, 10.0, 45, 2_800))
    job_at(conn, *destination(30.0, 10.0, 90, 3_200))  # just outside
    for lat, lng, expected in ((30.0, 10.0, 1), (12.97, 77.59, 50)):
        found: list[Any] = []

        def search(lat: float = lat, lng: float = lng, found: list[Any] = found) -> None:
            found.extend(queries.nearby_jobs(db.connection(), "w", lat, lng, 3_000, 50).jobs)

        wire = traced(search)
        assert len(found) == expected and len(wire.statements) == 1, wire.statements
    assert [str(j.id) for j in queries.nearby_jobs(conn, "w", 30.0, 10.0, 3_000, 50).jobs] == [far]


@pytest.mark.parametrize("radius", ["5e-324", "1e-300", "0.001"])
def test_the_tiniest_radius_finds_only_what_is_right_there(
    api: Api, conn: Connection, radius: str
) -> None:
    """Found by the fuzzer: a subnormal radius squared to zero and divided by it (a 500)."""
    here = job_at(conn, 65.1, -18.1)
    job_at(conn, *destination(65.1, -18.1, 0, 1))  # a metre away
    reply = nearby(api, 65.1, -18.1, radius_m=radius)
    assert reply.status == 200
    assert [(j["id"], j["distance_m"]) for j in reply.body["jobs"]] == [(here, 0.0)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lat=st.floats(-89.9, 89.9),
    lng=st.floats(-180, 180),
    radius=st.sampled_from([500, 3_000, 12_000, 45_000]),
    crowd=st.integers(0, 60),
)
def test_same_answer_as_brute_force(
    conn: Connection, lat: float, lng: float, radius: int, crowd: int
) -> None:
    """Whatever the place and however crowded: exactly what brute force says, nearest first,
    with a limit too (the walk settles early, or the cap is searched whole)."""
    empty_the_tables(conn)
    # Distances from 0.1 to 2 radii, none within 0.5% of the edge (where the last bits of two
    # floating-point computations could disagree), and a crowd scattered inside.
    factors = [0.1, 0.3, 0.5, 0.7, 0.9, 0.95, 0.99, 0.995, 1.005, 1.01, 1.05, 1.2, 1.5, 2.0]
    factors += [0.02 + 0.97 * ((i * 0.618034) % 1) for i in range(crowd)]
    points = [destination(lat, lng, (i * 47) % 360, radius * f) for i, f in enumerate(factors)]
    ids = {job_at(conn, *p): p for p in points}
    expected = {i for i, p in ids.items() if haversine(lat, lng, *p) <= radius}
    found = queries.nearby_jobs(conn, "w", lat, lng, radius, 200).jobs
    assert {str(j.id) for j in found} == expected
    # With a small limit the walk stops early: it must still return the true nearest.
    for limit in (3, 10):
        nearest = sorted(expected, key=lambda i: haversine(lat, lng, *ids[i]))[:limit]
        answer = queries.nearby_jobs(conn, "w", lat, lng, radius, limit).jobs
        assert [str(j.id) for j in answer] == nearest
