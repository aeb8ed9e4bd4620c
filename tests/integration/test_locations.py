"""Worker locations go to a real Redis (GEO), never to Postgres; Redis down is a clean 503."""

import time
from typing import cast

import pytest
import redis

from dispatch import db
from dispatch.config import settings
from dispatch.workers import locations
from dispatch.workers.models import WorkerPosition
from dispatch_local.events import LambdaContext
from dispatch_local.template import handler_of, schedules
from tests.support import Api, make_job, make_worker, worker


def members(cache: redis.Redis, key: str) -> list[str]:
    """The sorted set's members, lowest score first (the client answers bytes)."""
    return [m.decode() for m in cast(list[bytes], cache.zrange(key, 0, -1))]


def test_a_reported_location_lands_in_redis_only(
    api: Api, conn: db.Connection, cache: redis.Redis
) -> None:
    before = time.time()
    reply = api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.9716, "lng": 77.5946})
    assert (reply.status, reply.body) == (204, None)
    (position,) = cache.geopos(locations.position_keys().positions, "worker-1")
    assert position is not None
    lng, lat = position
    assert (round(lat, 4), round(lng, 4)) == (12.9716, 77.5946)
    seen = cache.zscore(locations.position_keys().seen, "worker-1")
    assert seen is not None and before <= seen <= time.time()
    # Nothing of it in Postgres, not even an idempotency key.
    assert conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM workers").fetchone() == {"n": 0}


def test_the_latest_position_wins(api: Api, cache: redis.Redis) -> None:
    for lat in (10.0, 11.0, 12.5):
        api.call("PUT", "/workers/me/location", worker(1), {"lat": lat, "lng": 77.0})
    (position,) = cache.geopos(locations.position_keys().positions, "worker-1")
    assert position is not None
    _, lat = position
    assert round(lat, 3) == 12.5
    assert cache.zcard(locations.position_keys().positions) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"lat": 91, "lng": 0},
        {"lat": 0, "lng": 181},
        {"lat": "1", "lng": 2},
        {"lat": 1},
        {},
        {"lat": 85.06, "lng": 0},  # beyond what Redis GEO can index (found by schemathesis)
        {"lat": -90, "lng": 0},
    ],
)
def test_bad_locations_are_refused(api: Api, cache: redis.Redis, body: object) -> None:
    reply = api.call("PUT", "/workers/me/location", worker(1), body)
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert cache.zcard(locations.position_keys().positions) == 0


def test_only_workers_report_locations(api: Api) -> None:
    reply = api.call(
        "PUT", "/workers/me/location", ("business-1", "business"), {"lat": 1, "lng": 2}
    )
    assert (reply.status, reply.code) == (403, "FORBIDDEN")


def test_redis_down_is_503_for_locations_while_claims_go_on(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")  # nothing listens there
    settings.cache_clear()
    locations.client.cache_clear()
    try:
        down = api.call("PUT", "/workers/me/location", worker(1), {"lat": 1, "lng": 2})
        assert (down.status, down.code) == (503, "UNAVAILABLE")
        job = make_job(api)
        make_worker(api, worker(1))
        assert api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).status == 200
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        locations.client.cache_clear()


def test_the_sweeper_forgets_positions_nobody_reported_for_an_hour(
    conn: db.Connection, cache: redis.Redis
) -> None:
    now = time.time()
    here = WorkerPosition(lat=12.97, lng=77.59)
    for n in range(1_500):  # more than one pruning pass holds
        locations.report(f"gone-{n}", here, now=now - 3_601)
    # Half an hour ago, not a second inside the hour: reporting the 1,500 above takes over a
    # second on a loaded machine, and the sweep's cutoff is its own clock's.
    locations.report("recent", here, now=now - 1_800)
    sweeper = handler_of(next(s for s in schedules() if s.function == "LeaseSweeperFunction"))
    done = sweeper({}, LambdaContext(function_name="LeaseSweeperFunction"))
    assert done["positions_pruned"] == 1_500
    assert members(cache, locations.position_keys().positions) == ["recent"]
    assert members(cache, locations.position_keys().seen) == ["recent"]


def test_the_sweep_goes_on_when_redis_is_down(
    conn: db.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")
    settings.cache_clear()
    locations.client.cache_clear()
    try:
        sweeper = handler_of(next(s for s in schedules() if s.function == "LeaseSweeperFunction"))
        done = sweeper({}, LambdaContext(function_name="LeaseSweeperFunction"))
        assert done["positions_pruned"] == 0 and done["reopened"] == 0
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        locations.client.cache_clear()
