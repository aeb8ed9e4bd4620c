"""Worker locations go to a real Redis (GEO), never to Postgres; Redis down is a clean 503."""

import random
import time
from typing import cast

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot

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
    cell = locations.cell_keys(locations.cell_of(12.9716, 77.5946))
    (position,) = cache.geopos(cell.positions, "worker-1")
    assert position is not None
    lng, lat = position
    assert (round(lat, 4), round(lng, 4)) == (12.9716, 77.5946)
    seen = cache.zscore(cell.seen, "worker-1")
    assert seen is not None and before <= seen <= time.time()
    assert locations.fresh_positions(["worker-1"]) == {"worker-1": (12.9716, 77.5946)}
    # Nothing of it in Postgres, not even an idempotency key.
    assert conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone() == {"n": 0}
    assert conn.execute("SELECT count(*) AS n FROM workers").fetchone() == {"n": 0}


def test_the_latest_position_wins(api: Api, cache: redis.Redis) -> None:
    """Within a cell and from cell to cell: the worker is in the last one only."""
    for lat in (10.0, 10.01, 11.0, 12.5):
        api.call("PUT", "/workers/me/location", worker(1), {"lat": lat, "lng": 77.0})
    last = locations.cell_keys(locations.cell_of(12.5, 77.0))
    (position,) = cache.geopos(last.positions, "worker-1")
    assert position is not None
    _, lat = position
    assert round(lat, 3) == 12.5
    assert cache.zcard(last.positions) == cache.zcard(last.seen) == 1
    for left in (10.0, 11.0):
        keys = locations.cell_keys(locations.cell_of(left, 77.0))
        assert cache.zcard(keys.positions) == cache.zcard(keys.seen) == 0
    assert locations.fresh_positions(["worker-1"]) == {"worker-1": (12.5, 77.0)}
    assert [w for w, _ in locations.fresh_nearby(12.5, 77.0, 100, 10)] == ["worker-1"]
    assert locations.fresh_nearby(10.0, 77.0, 100, 10) == []


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
    assert cache.exists(locations.record_key("worker-1"), locations.cells_key()) == 0


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
    here, there = WorkerPosition(lat=12.97, lng=77.59), WorkerPosition(lat=13.5, lng=77.59)
    for n in range(1_500):  # more than one pruning pass holds
        locations.report(f"gone-{n}", here, now=now - 3_601)
    locations.report("gone-there", there, now=now - 3_601)
    # Half an hour ago, not a second inside the hour: reporting the 1,500 above takes over a
    # second on a loaded machine, and the sweep's cutoff is its own clock's.
    locations.report("recent", here, now=now - 1_800)
    # A worker's own key never outlives its entry in the cell (it expires first).
    assert cache.exists(locations.record_key("gone-1"), locations.record_key("recent")) == 1
    sweeper = handler_of(next(s for s in schedules() if s.function == "LeaseSweeperFunction"))
    done = sweeper({}, LambdaContext(function_name="LeaseSweeperFunction"))
    assert done["positions_pruned"] == 1_501
    cell = locations.cell_keys(locations.cell_of(here.lat, here.lng))
    assert members(cache, cell.positions) == members(cache, cell.seen) == ["recent"]
    # The cell left empty left the set of cells the prune walks; the other stays.
    assert cast(set[bytes], cache.smembers(locations.cells_key())) == {
        locations.cell_of(here.lat, here.lng).encode()
    }
    # Back after the prune: its cell is walked again, and it goes when it is gone again.
    locations.report("gone-there", there, now=now - 3_601)
    assert locations.cell_of(there.lat, there.lng).encode() in cast(
        set[bytes], cache.smembers(locations.cells_key())
    )
    assert locations.prune() == 1


def test_nearby_is_one_map_across_cells(cache: redis.Redis) -> None:
    """Positions kept by cell answer as one map would: the same workers at the same distances,
    nearest first, within the limit, the stale left out, for circles across cell borders and
    corners, the antimeridian and the far north (checked against one key holding everyone,
    searched by Redis itself)."""
    rng = random.Random(7)
    now = time.time()
    reference, seen = "{reference}:positions", {}
    places = [(12.9, 77.6), (-33.9, 151.2), (0.0, 179.98), (64.1, -21.9), (-0.05, 0.0)]
    try:
        for p, (lat0, lng0) in enumerate(places):
            for n in range(300):
                lat = lat0 + rng.uniform(-0.12, 0.12)
                lng = (lng0 + rng.uniform(-0.12, 0.12) + 540) % 360 - 180
                worker_id = f"w-{p}-{n}"
                seen[worker_id] = now - (200 if n % 10 == 0 else rng.uniform(0, 60))
                locations.report(worker_id, WorkerPosition(lat=lat, lng=lng), now=seen[worker_id])
                cache.geoadd(reference, (lng, lat, worker_id))
        cutoff = time.time() - settings().location_fresh_seconds
        for lat0, lng0 in places:
            for _ in range(12):
                lat = lat0 + rng.uniform(-0.08, 0.08)
                lng = (lng0 + rng.uniform(-0.08, 0.08) + 540) % 360 - 180
                radius, limit = rng.choice([500, 3_000, 8_000]), rng.choice([5, 50, 500])
                found = cast(list[tuple[bytes, float]], cache.geosearch(
                    reference, longitude=lng, latitude=lat, radius=radius, unit="m",
                    sort="ASC", count=limit, withdist=True,
                ))  # fmt: skip
                expected = [(w.decode(), d) for w, d in found if seen[w.decode()] >= cutoff]
                assert locations.fresh_nearby(lat, lng, radius, limit) == expected
        # A box across cells: everyone fresh inside it, whatever cell holds them.
        south, west, north, east = 12.85, 77.55, 12.95, 77.68
        inside = {
            w.decode()
            for w, (w_lng, w_lat) in cast(
                list[tuple[bytes, tuple[float, float]]],
                cache.geosearch(
                    reference,
                    longitude=77.6,
                    latitude=12.9,
                    width=30_000,
                    height=30_000,
                    unit="m",
                    withcoord=True,
                ),
            )
            if west <= w_lng <= east and south <= w_lat <= north and seen[w.decode()] >= cutoff
        }
        boxed = locations.fresh_in_box(west, south, east, north, 5_000)
        assert len(inside) > 20 and {w for w, *_ in boxed} == inside
    finally:
        cache.delete(reference)


def test_a_worker_in_two_cells_is_where_it_was_last_seen(cache: redis.Redis) -> None:
    """Its removal from the cell it left was lost (a crash between the two round trips): it
    counts once, at its latest position, and the stale entry goes at the next prune."""
    now = time.time()
    old, new = WorkerPosition(lat=12.99, lng=77.6), WorkerPosition(lat=13.01, lng=77.6)
    assert locations.cell_of(old.lat, old.lng) != locations.cell_of(new.lat, new.lng)
    locations.report("mover", new, now=now)
    left = locations.cell_keys(locations.cell_of(old.lat, old.lng))
    cache.geoadd(left.positions, (old.lng, old.lat, "mover"))
    cache.zadd(left.seen, {"mover": now - 30})
    (only,) = locations.fresh_nearby(13.005, 77.6, 3_000, 10)
    assert only[0] == "mover" and abs(only[1] - 556) < 5
    (boxed,) = locations.fresh_in_box(77.5, 12.9, 77.7, 13.1, 10)
    assert boxed[0] == "mover" and (round(boxed[1], 4), round(boxed[2], 4)) == (13.01, 77.6)
    assert boxed[3] == now


def test_a_metro_spreads_over_the_shards(cache: redis.Redis) -> None:
    """Positions by area: a 40 km metro's workers sit in dozens of cells, whose keys hash to
    dozens of slots, which a cluster spreads over its shards (all three on the AWS-path tier)."""
    rng = random.Random(3)
    for n in range(400):
        where = WorkerPosition(
            lat=12.97 + rng.uniform(-0.18, 0.18), lng=77.59 + rng.uniform(-0.18, 0.18)
        )
        locations.report(f"w-{n}", where)
    cells = {c.decode() for c in cast(set[bytes], cache.smembers(locations.cells_key()))}
    keys = [locations.cell_keys(cell).positions for cell in cells]
    assert len(cells) >= 16 and len({key_slot(k.encode()) for k in keys}) == len(cells)
    if isinstance(cache, RedisCluster):
        shards = {cache.get_node_from_key(k).name for k in keys}
        assert shards == {node.name for node in cache.get_primaries()}
        assert len(shards) == 3


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


def test_a_read_that_carries_where_i_am_is_my_report(api: Api, cache: redis.Redis) -> None:
    """The contract's rule: the offers' list with ?lat&lng, and nearby (unless here=false),
    count as a position report; only both of lat and lng make one."""
    assert api.call("GET", "/workers/me/offers?lat=12.97&lng=77.59", worker(1)).status == 200
    assert locations.fresh_positions(["worker-1"]) == {"worker-1": (12.97, 77.59)}
    nearby = api.call("GET", "/jobs/nearby?lat=12.98&lng=77.6", worker(2), key=None)
    assert nearby.status == 200
    elsewhere = api.call("GET", "/jobs/nearby?lat=13.5&lng=77.6&here=false", worker(1), key=None)
    assert elsewhere.status == 200
    assert locations.fresh_positions(["worker-1", "worker-2"]) == {
        "worker-1": (12.97, 77.59),
        "worker-2": (12.98, 77.6),
    }
    half = api.call("GET", "/workers/me/offers?lat=12.97", worker(3))
    assert (half.status, half.code) == (400, "VALIDATION_FAILED")
    assert "lat and lng" in str(half.body)
    beyond = api.call("GET", "/workers/me/offers?lat=86&lng=0", worker(3))
    assert (beyond.status, beyond.code) == (400, "VALIDATION_FAILED")
    assert locations.fresh_positions(["worker-3"]) == {}


def test_a_read_answers_when_redis_cannot_take_its_position(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:9/0")
    settings.cache_clear()
    locations.client.cache_clear()
    try:
        offers = api.call("GET", "/workers/me/offers?lat=12.97&lng=77.59", worker(1))
        assert (offers.status, offers.body) == (200, {"offers": []})
        nearby = api.call("GET", "/jobs/nearby?lat=12.97&lng=77.59", worker(1), key=None)
        assert nearby.status == 200
    finally:
        monkeypatch.undo()
        settings.cache_clear()
        locations.client.cache_clear()
