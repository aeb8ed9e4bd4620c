"""Worker locations: hot, disposable, latest wins, in Redis GEO and never in Postgres.

One sorted set holds every worker's position (GEOADD), another when each was last seen, so
that stale positions can be ignored and pruned. Both are written in one round trip.

redis is imported on first use, not at cold start: only the routes that read or write
positions need it. Redis out of reach is said in the layer's own terms (CacheUnavailable,
a 503 on the HTTP routes), so that nothing else imports redis to recognise its errors.
"""

import importlib
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, NamedTuple

from dispatch.config import settings
from dispatch.errors import CacheUnavailable
from dispatch.fields import GEO_MAX_LAT
from dispatch.observability import logger
from dispatch.snapshots import before_snapshot
from dispatch.workers.models import WorkerPosition

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

    Client = redis.Redis | RedisCluster


class Keys(NamedTuple):
    """The two sorted sets. On a sharded keyspace (Redis Cluster, ElastiCache Serverless) a
    key lives on the slot its hash tag (the part in braces) names: both share one tag, so the
    pipeline and the prune script that touch both stay on one shard (no CROSSSLOT). All
    positions sit in one slot either way, as GEOSEARCH reads one key (docs/scaling.md)."""

    positions: str
    seen: str


def position_keys() -> Keys:
    tag = "{" + settings().redis_namespace + ":workers}"
    return Keys(f"{tag}:positions", f"{tag}:seen")


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


def forget_everyone() -> None:
    """Every position gone (a fresh test, a new simulated city)."""
    with reachable() as r:
        r.delete(*position_keys())


def report(worker_id: str, where: WorkerPosition, now: float | None = None) -> None:
    with reachable() as r:
        positions, seen = position_keys()
        pipe = r.pipeline(transaction=False)
        pipe.geoadd(positions, (where.lng, where.lat, worker_id))
        pipe.zadd(seen, {worker_id: time.time() if now is None else now})
        pipe.execute()


def fresh_nearby(lat: float, lng: float, radius_m: float, limit: int) -> list[tuple[str, float]]:
    """Workers seen within the freshness period and within `radius_m`: (id, metres), nearest
    first. Two round trips: the nearest `limit` positions, then when each was last seen."""
    if abs(lat) > GEO_MAX_LAT:
        return []  # nobody can have reported a position up there
    positions, seen_at = position_keys()
    with reachable() as r:
        found: list[tuple[bytes, float]] = r.geosearch(  # type: ignore[assignment]  # WITHDIST
            positions,
            longitude=lng,
            latitude=lat,
            radius=radius_m,
            unit="m",
            sort="ASC",
            count=limit,
            withdist=True,
        )
        if not found:
            return []
        seen = r.zmscore(seen_at, [worker_id.decode() for worker_id, _ in found])
    cutoff = time.time() - settings().location_fresh_seconds
    return [
        (worker_id.decode(), float(distance))
        for (worker_id, distance), last_seen in zip(found, seen, strict=True)
        if last_seen is not None and last_seen >= cutoff
    ]


def fresh_positions(worker_ids: list[str]) -> dict[str, tuple[float, float]]:
    """Where each of these workers is, (lat, lng), for those seen within the freshness period;
    the others are left out. Two commands in one round trip."""
    positions, seen_at = position_keys()
    with reachable() as r:
        pipe = r.pipeline(transaction=False)
        pipe.geopos(positions, *worker_ids)
        pipe.zmscore(seen_at, worker_ids)
        found, seen = pipe.execute()
    cutoff = time.time() - settings().location_fresh_seconds
    return {
        worker_id: (float(where[1]), float(where[0]))
        for worker_id, where, last_seen in zip(worker_ids, found, seen, strict=True)
        if where is not None and last_seen is not None and last_seen >= cutoff
    }


def fresh_in_box(
    min_lng: float, min_lat: float, max_lng: float, max_lat: float, limit: int
) -> list[tuple[str, float, float, float]]:
    """Fresh positions within the box: (id, lat, lng, last seen as a Unix time), at most
    `limit` (the nearest to the box's centre). Redis searches the box around its centre in
    metres; the exact box in degrees then decides."""
    lat, lng = (min_lat + max_lat) / 2, (min_lng + max_lng) / 2
    if abs(lat) > GEO_MAX_LAT:
        return []
    metres_per_degree = 111_320.0
    width = (max_lng - min_lng) * metres_per_degree * max(0.01, math.cos(math.radians(lat)))
    height = (max_lat - min_lat) * metres_per_degree
    positions, seen_at = position_keys()
    with reachable() as r:
        found: list[tuple[bytes, tuple[float, float]]] = r.geosearch(  # type: ignore[assignment]
            positions,
            longitude=lng,
            latitude=lat,
            width=width * 1.01,  # a little wider: the box in metres is not the box in degrees
            height=height * 1.01,
            unit="m",
            sort="ASC",
            count=limit,
            withcoord=True,
        )
        inside = [
            (worker_id.decode(), float(at[1]), float(at[0]))
            for worker_id, at in found
            if min_lng <= at[0] <= max_lng and min_lat <= at[1] <= max_lat
        ]
        if not inside:
            return []
        seen = r.zmscore(seen_at, [worker_id for worker_id, *_ in inside])
    cutoff = time.time() - settings().location_fresh_seconds
    return [
        (worker_id, w_lat, w_lng, float(last_seen))
        for (worker_id, w_lat, w_lng), last_seen in zip(inside, seen, strict=True)
        if last_seen is not None and last_seen >= cutoff
    ]


# Atomic, so a worker who reports between the read and the removal keeps the new position.
# At most 1000 per call: Lua's unpack() has a bounded stack.
_PRUNE = """
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, 1000)
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
end
return #gone
"""


def prune() -> int:
    """Forget positions not reported for the keep period; returns how many went."""
    cutoff = time.time() - settings().location_keep_seconds
    with reachable() as r:
        script = r.register_script(_PRUNE)
        total = 0
        while removed := int(script(keys=list(position_keys()), args=[cutoff])):
            total += removed
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
