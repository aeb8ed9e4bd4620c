"""Worker locations: hot, disposable, latest wins, in Redis GEO and never in Postgres.

Each cell of the map has a sorted set of positions (GEOADD) and another of when each was last
seen, so that stale positions can be ignored and pruned; each worker a key of its own with its
last position. A report writes the worker's key and its cell's sets in one round trip.

redis is imported on first use, not at cold start: only the routes that read or write
positions need it. Redis out of reach is said in the layer's own terms (CacheUnavailable,
a 503 on the HTTP routes), so that nothing else imports redis to recognise its errors.
"""

import heapq
import importlib
import math
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from dispatch.config import settings
from dispatch.errors import CacheUnavailable
from dispatch.fields import GEO_MAX_LAT
from dispatch.observability import count, logger
from dispatch.snapshots import before_snapshot
from dispatch.workers.models import WorkerPosition

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

    Client = redis.Redis | RedisCluster


# Positions are kept by area, so that a sharded keyspace (Redis Cluster, ElastiCache
# Serverless) spreads them: the earth is cut into cells of CELL_DEGREES, and each cell has its
# own pair of sorted sets. A key lives on the slot its hash tag (the part in braces) names; a
# cell's two keys share the cell's tag, so a report's writes and the prune script that touch
# both stay on one slot (no CROSSSLOT), while different cells land on different slots. About
# 11 km a side: a metro spans dozens of cells (dozens of slots), and a wave's radius (3 to
# 8 km) touches one to nine of them. docs/scaling.md, "Worker locations".
CELL_DEGREES = 0.1
COLUMNS = 3600  # cells round the earth at one latitude
EARTH_RADIUS_M = 6372797.560856  # Redis GEO's sphere: a cell's search measures on it
# Cells are chosen by the reported position; Redis keeps a 52-bit geohash of it (under a metre
# off): a search pads its radius by this much, so no cell a member could be in is missed.
PAD_M = 10.0
# The widest search a caller may ask for, so that a mistake is an error and not a pipeline of
# millions: a wave's radius is held to 50 km (some 1,100 cells at the far north, nine at 8 km
# elsewhere), the ops map's box to 2 degrees (441).
MAX_CELLS = 2500
# A worker's own key (its last position) outlives none of its cell entries: it expires this
# long before the prune would drop the worker's entry, so that a report after a prune finds no
# key and registers its cell again (clocks of the writers and the sweeper may differ a little).
RECORD_MARGIN_S = 60


class Keys(NamedTuple):
    """A cell's two sorted sets: positions (GEOADD) and when each was last seen (ZADD)."""

    positions: str
    seen: str


def cell_of(lat: float, lng: float) -> str:
    """The cell a position belongs to: its row and column, `row:column`."""
    row = math.floor(lat / CELL_DEGREES)
    column = math.floor((lng + 180.0) / CELL_DEGREES) % COLUMNS
    return f"{row}:{column}"


def cell_keys(cell: str) -> Keys:
    tag = "{" + settings().redis_namespace + ":cell:" + cell + "}"
    return Keys(f"{tag}:positions", f"{tag}:seen")


def cells_key() -> str:
    """The set of cells that hold someone (the prune walks it). Written when a worker enters a
    cell, not at every report, so this one key is not every report's slot."""
    return settings().redis_namespace + ":cells"


def record_key(worker_id: str) -> str:
    """A worker's last position, `lat lng seen`: where it is (fresh_positions) and which cell
    to leave when it reports from another. No hash tag: workers spread over every slot."""
    return settings().redis_namespace + ":at:" + worker_id


def _columns(west: float, east: float) -> list[int]:
    first = math.floor((west + 180.0) / CELL_DEGREES)
    last = math.floor((east + 180.0) / CELL_DEGREES)
    if last - first + 1 >= COLUMNS:
        return list(range(COLUMNS))
    return [column % COLUMNS for column in range(first, last + 1)]  # across the antimeridian


def _cells(south: float, north: float, columns: list[int]) -> list[str]:
    rows = range(math.floor(max(south, -90.0) / CELL_DEGREES),
                 math.floor(min(north, 90.0) / CELL_DEGREES) + 1)  # fmt: skip
    if len(rows) * len(columns) > MAX_CELLS:
        raise ValueError(f"a search over {len(rows) * len(columns)} cells (at most {MAX_CELLS})")
    return [f"{row}:{column}" for row in rows for column in columns]


def cells_around(lat: float, lng: float, radius_m: float) -> list[str]:
    """Every cell a position within `radius_m` of (lat, lng) can be in: the circle's bounding
    box on Redis's sphere (its widest longitude is asin(sin d / cos lat) either way)."""
    spread = (radius_m + PAD_M) / EARTH_RADIUS_M  # radians
    reach = math.degrees(spread)
    if abs(lat) + reach >= 90.0 or (ratio := math.sin(spread) / math.cos(math.radians(lat))) >= 1:
        columns = list(range(COLUMNS))  # the circle holds a pole
    else:
        across = math.degrees(math.asin(ratio))
        columns = _columns(lng - across, lng + across)
    return _cells(lat - reach, lat + reach, columns)


def cells_in_box(min_lng: float, min_lat: float, max_lng: float, max_lat: float) -> list[str]:
    """Every cell a position within the box (in degrees) can be in."""
    pad = math.degrees(PAD_M / EARTH_RADIUS_M) / max(
        0.01, math.cos(math.radians(max(abs(min_lat), abs(max_lat))))
    )
    return _cells(min_lat - pad, max_lat + pad, _columns(min_lng - pad, max_lng + pad))


@cache
def client() -> "Client":
    """One client per execution environment; short timeouts: a slow Redis answers 503 fast."""
    url = settings().redis_url
    if not url:
        raise CacheUnavailable("REDIS_URL is not set")
    return connect(url, cluster=settings().redis_cluster)


@before_snapshot
def _into_the_snapshot() -> None:
    """redis imported, so a restored environment has it; no client (one connection each)."""
    importlib.import_module("redis")
    if client.cache_info().currsize:
        client().close()
    client.cache_clear()


def connect(url: str, cluster: bool) -> "Client":
    """A client for `url`: cluster-aware (it follows MOVED and keeps the slot map) when the
    keyspace is sharded, plain otherwise."""
    timeouts = {"socket_timeout": 1, "socket_connect_timeout": 1}
    if cluster:
        from redis.cluster import RedisCluster

        return RedisCluster.from_url(url, **timeouts)
    import redis

    return redis.Redis.from_url(url, **timeouts)


@contextmanager
def reachable() -> Iterator["Client"]:
    """The client; Redis refusing, dropping or timing out raises CacheUnavailable (a cluster
    that cannot serve a slot too)."""
    import redis
    from redis.exceptions import ClusterError, RedisClusterException

    try:
        yield client()
    except (
        redis.ConnectionError,
        redis.TimeoutError,
        ClusterError,
        RedisClusterException,
    ) as error:
        raise CacheUnavailable(repr(error)) from error


def forget_everyone(r: "Client | None" = None) -> None:
    """Every position gone (a fresh test, a new simulated city), through `r` or this process's
    client: SCAN finds the keys, on every shard of a cluster. Not for production: it reads the
    whole keyspace."""
    if r is None:
        with reachable() as r:
            return forget_everyone(r)
    namespace = settings().redis_namespace
    for pattern in ("{" + namespace + ":cell:*", namespace + ":at:*"):
        batch: list[bytes] = []
        for key in r.scan_iter(match=pattern, count=1000):
            batch.append(key)
            if len(batch) == 1000:
                r.delete(*batch)
                batch.clear()
        if batch:
            r.delete(*batch)
    r.delete(cells_key())
    return None


GONE = b"gone"  # a worker's key after its app's socket closed: `gone <when>`


def _record(value: bytes | None) -> tuple[float, float, float] | None:
    """(lat, lng, seen) from a worker's key; None when it has none, or is gone."""
    if value is None or value.startswith(GONE):
        return None
    lat, lng, seen = value.split()
    return float(lat), float(lng), float(seen)


def _gone_at(value: bytes | None) -> float | None:
    """When the worker went off the map, if its key says it did."""
    return float(value.split()[1]) if value is not None and value.startswith(GONE) else None


class Report(NamedTuple):
    """A worker was here at `seen` (a Unix time)."""

    worker_id: str
    lat: float
    lng: float
    seen: float


def report(worker_id: str, where: WorkerPosition, now: float | None = None) -> None:
    """The worker is here now (the HTTP route, a read that carries a position)."""
    report_many([Report(worker_id, where.lat, where.lng, time.time() if now is None else now)])


def report_with_a_read(worker_id: str, lat: float, lng: float) -> bool:
    """A read that carries where the worker is counts as a report (the contract's rule,
    docs/api.md "Reporting positions"). Redis out of reach fails the report, never the read:
    False, logged and counted; the app's next report brings the position."""
    if abs(lat) > GEO_MAX_LAT:
        return False  # beyond what Redis GEO indexes: nobody is offered anything up there
    try:
        report(worker_id, WorkerPosition(lat=lat, lng=lng))
    except CacheUnavailable as error:
        logger.warning("position with a read not recorded", extra={"error": str(error)})
        count("PositionsNotRecorded")
        return False
    return True


def report_many(reports: Iterable[Report]) -> int:
    """Write reports, the latest of each worker's (a batch off the position stream, or one);
    returns how many workers were written. One round trip for them all: each worker's own key
    (its last position, the one before answered by SET ... GET) and its cell's two sets. A
    second when some entered another cell (out of the old cell, the new registered for the
    prune), or when the key said the worker had gone off the map after a report was sent (the
    report is undone: it arrived too late). Reports of one worker arrive in order (the stream
    keeps each worker's in order)."""
    latest: dict[str, Report] = {}
    for one in reports:
        if one.worker_id not in latest or latest[one.worker_id].seen <= one.seen:
            latest[one.worker_id] = one
    if not latest:
        return 0
    keep = settings().location_keep_seconds
    margin = min(RECORD_MARGIN_S, keep / 2)
    cells = {worker_id: cell_of(one.lat, one.lng) for worker_id, one in latest.items()}
    with reachable() as r:
        pipe = r.pipeline(transaction=False)
        for worker_id, one in latest.items():
            positions, seen_at = cell_keys(cells[worker_id])
            pipe.set(
                record_key(worker_id),
                f"{one.lat!r} {one.lng!r} {one.seen!r}",
                pxat=max(1, int((one.seen + keep - margin) * 1000)),
                get=True,
            )
            pipe.geoadd(positions, (one.lng, one.lat, worker_id))
            pipe.zadd(seen_at, {worker_id: one.seen})
        answers = pipe.execute()
        moved: list[tuple[str, str | None]] = []
        undone: list[tuple[str, float]] = []
        for n, (worker_id, one) in enumerate(latest.items()):
            gone = _gone_at(answers[3 * n])
            if gone is not None and gone >= one.seen:
                undone.append((worker_id, gone))  # sent before its socket closed: too late
                continue
            before = _record(answers[3 * n])
            left = None if before is None else cell_of(before[0], before[1])
            if left != cells[worker_id]:
                moved.append((worker_id, left))
        if moved or undone:
            pipe = r.pipeline(transaction=False)
            for worker_id, left in moved:
                if left is not None:
                    pipe.zrem(cell_keys(left).positions, worker_id)
                    pipe.zrem(cell_keys(left).seen, worker_id)
            for worker_id, gone in undone:
                _mark_gone(pipe, worker_id, gone)
                pipe.zrem(cell_keys(cells[worker_id]).positions, worker_id)
                pipe.zrem(cell_keys(cells[worker_id]).seen, worker_id)
            if moved:
                pipe.sadd(cells_key(), *{cells[worker_id] for worker_id, _ in moved})
            pipe.execute()
    return len(latest) - len(undone)


def _gone(at: float) -> tuple[bytes, int]:
    """A worker's key saying it went off the map `at`, and until when it says so (the
    freshness period: a report it sent before then that arrives later, after the stream's
    second of batching or a retry, is not written; report_many)."""
    return GONE + f" {at!r}".encode(), int((at + settings().location_fresh_seconds) * 1000)


def _mark_gone(pipe: Any, worker_id: str, at: float) -> None:
    value, until = _gone(at)
    pipe.set(record_key(worker_id), value, pxat=until)


def forget(worker_id: str, now: float | None = None) -> bool:
    """The worker is off the map (its app's socket closed): out of its cell, its own key
    saying when it went; True when it was on it. Two round trips: its key (the cell it was in,
    answered by SET ... GET), then the removals."""
    value, until = _gone(time.time() if now is None else now)
    with reachable() as r:
        replaced = r.set(record_key(worker_id), value, pxat=until, get=True)
        before = _record(cast(bytes | None, replaced))
        if before is None:
            return False
        keys = cell_keys(cell_of(before[0], before[1]))
        pipe = r.pipeline(transaction=False)
        pipe.zrem(keys.positions, worker_id)
        pipe.zrem(keys.seen, worker_id)
        pipe.execute()
    return True


def forget_if_reachable(worker_id: str) -> bool:
    """forget, Redis out of reach failing nothing: the position then goes stale on its own."""
    try:
        return forget(worker_id)
    except CacheUnavailable as error:
        logger.warning("position not forgotten", extra={"error": str(error)})
        return False


def _fresh(r: "Client", found: list[tuple[float, str, str]]) -> list[tuple[float, str, str, float]]:
    """Of (distance, worker, cell), those seen within the freshness period, each worker once,
    nearest first, with when each was last seen: (distance, worker, cell, seen). One round
    trip, a ZMSCORE per cell. A worker in two cells (its removal from the one it left was
    lost) is where it was last seen; the stale entry goes at the next prune."""
    by_cell: dict[str, list[str]] = {}
    for _, worker_id, cell in found:
        by_cell.setdefault(cell, []).append(worker_id)
    pipe = r.pipeline(transaction=False)
    for cell, ids in by_cell.items():
        pipe.zmscore(cell_keys(cell).seen, ids)
    seen: dict[tuple[str, str], float | None] = {}
    for (cell, ids), scores in zip(by_cell.items(), pipe.execute(), strict=True):
        seen.update(
            ((cell, worker_id), score) for worker_id, score in zip(ids, scores, strict=True)
        )
    cutoff = time.time() - settings().location_fresh_seconds
    latest: dict[str, tuple[float, str, str, float]] = {}
    for distance, worker_id, cell in found:
        last_seen = seen[cell, worker_id]
        if last_seen is None or last_seen < cutoff:
            continue
        if worker_id not in latest or latest[worker_id][3] < last_seen:
            latest[worker_id] = (distance, worker_id, cell, last_seen)
    return sorted(latest.values())


def fresh_nearby(lat: float, lng: float, radius_m: float, limit: int) -> list[tuple[str, float]]:
    """Workers seen within the freshness period and within `radius_m`: (id, metres), nearest
    first. Two round trips: the nearest `limit` in each cell the circle touches (the nearest
    `limit` of all are among them), then when each of the nearest `limit` was last seen."""
    if abs(lat) > GEO_MAX_LAT:
        return []  # nobody can have reported a position up there
    cells = cells_around(lat, lng, radius_m)
    with reachable() as r:
        pipe = r.pipeline(transaction=False)
        for cell in cells:
            pipe.geosearch(
                cell_keys(cell).positions,
                longitude=lng,
                latitude=lat,
                radius=radius_m,
                unit="m",
                sort="ASC",
                count=limit,
                withdist=True,
            )
        found = heapq.nsmallest(
            limit,
            (
                (float(distance), worker_id.decode(), cell)
                for cell, hits in zip(cells, pipe.execute(), strict=True)
                for worker_id, distance in hits
            ),
        )
        if not found:
            return []
        return [(worker_id, distance) for distance, worker_id, *_ in _fresh(r, found)]


def fresh_positions(worker_ids: list[str]) -> dict[str, tuple[float, float]]:
    """Where each of these workers is, (lat, lng), for those seen within the freshness period;
    the others are left out. One round trip: each worker's own key."""
    with reachable() as r:
        pipe = r.pipeline(transaction=False)
        for worker_id in worker_ids:
            pipe.get(record_key(worker_id))
        records = [_record(value) for value in pipe.execute()]
    cutoff = time.time() - settings().location_fresh_seconds
    return {
        worker_id: (record[0], record[1])
        for worker_id, record in zip(worker_ids, records, strict=True)
        if record is not None and record[2] >= cutoff
    }


def fresh_in_box(
    min_lng: float, min_lat: float, max_lng: float, max_lat: float, limit: int
) -> list[tuple[str, float, float, float]]:
    """Fresh positions within the box: (id, lat, lng, last seen as a Unix time), at most
    `limit` (the nearest to the box's centre). Redis searches each cell the box touches for a
    box around its centre in metres, as wide as the box's widest latitude; the exact box in
    degrees then decides."""
    lat, lng = (min_lat + max_lat) / 2, (min_lng + max_lng) / 2
    if abs(lat) > GEO_MAX_LAT:
        return []
    metres_per_degree = math.radians(EARTH_RADIUS_M)
    nearest_the_equator = 0.0 if min_lat <= 0 <= max_lat else min(abs(min_lat), abs(max_lat))
    width = (max_lng - min_lng) * metres_per_degree * math.cos(math.radians(nearest_the_equator))
    height = (max_lat - min_lat) * metres_per_degree
    cells = cells_in_box(min_lng, min_lat, max_lng, max_lat)
    with reachable() as r:
        pipe = r.pipeline(transaction=False)
        for cell in cells:
            pipe.geosearch(
                cell_keys(cell).positions,
                longitude=lng,
                latitude=lat,
                width=width * 1.01 + 2 * PAD_M,
                height=height * 1.01 + 2 * PAD_M,
                unit="m",
                sort="ASC",
                count=limit,
                withdist=True,
                withcoord=True,
            )
        inside = heapq.nsmallest(
            limit,
            (
                (float(distance), worker_id.decode(), cell, float(at[1]), float(at[0]))
                for cell, hits in zip(cells, pipe.execute(), strict=True)
                for worker_id, distance, at in hits
                if min_lng <= at[0] <= max_lng and min_lat <= at[1] <= max_lat
            ),
        )
        if not inside:
            return []
        where = {(cell, worker_id): (w_lat, w_lng) for _, worker_id, cell, w_lat, w_lng in inside}
        fresh = _fresh(r, [(distance, worker_id, cell) for distance, worker_id, cell, *_ in inside])
    return [(worker_id, *where[cell, worker_id], seen) for _, worker_id, cell, seen in fresh]


# Atomic, so a worker who reports between the read and the removal keeps the new position.
# At most 1000 per call: Lua's unpack() has a bounded stack. Answers how many went and how
# many are left.
_PRUNE = """
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
end
return {#gone, redis.call('ZCARD', KEYS[2])}
"""


def prune() -> int:
    """Forget positions not reported for the keep period, cell by cell; returns how many went.
    A cell left empty leaves the set of cells; a worker entering it meanwhile puts it back
    (it adds itself to the cell before the cell to the set, and the cell is looked at again
    after its removal from the set)."""
    cutoff = time.time() - settings().location_keep_seconds
    total = 0
    with reachable() as r:
        script = r.register_script(_PRUNE)
        for name in r.sscan_iter(cells_key(), count=1000):
            cell = name.decode()
            keys = cell_keys(cell)
            while True:
                removed, remaining = (int(n) for n in script(keys=list(keys), args=[cutoff]))
                total += removed
                if removed < 1000:
                    break
            if remaining == 0:
                r.srem(cells_key(), cell)
                if r.zcard(keys.seen):
                    r.sadd(cells_key(), cell)
    return total


def prune_if_reachable() -> int:
    """The sweeper's housekeeping: an unreachable Redis must not fail the sweep."""
    import redis
    from redis.exceptions import RedisClusterException

    try:
        return prune()
    except (CacheUnavailable, redis.RedisError, RedisClusterException) as error:
        logger.warning("locations not pruned", extra={"error": repr(error)})
        return 0
