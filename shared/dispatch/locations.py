"""Worker locations: hot, disposable, latest wins, in Redis GEO and never in Postgres.

One sorted set holds every worker's position (GEOADD), another when each was last seen, so
that stale positions can be ignored and pruned. Both are written in one round trip.
"""

import time
from functools import cache

import redis

from dispatch.config import settings
from dispatch.jobs.models import Location

POSITIONS = "dispatch:workers:positions"
LAST_SEEN = "dispatch:workers:seen"


@cache
def client() -> redis.Redis:
    """One client per execution environment; short timeouts: a slow Redis answers 503 fast."""
    url = settings().redis_url
    if not url:
        raise redis.ConnectionError("REDIS_URL is not set")
    return redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)


def report(worker_id: str, where: Location, now: float | None = None) -> None:
    pipe = client().pipeline(transaction=False)
    pipe.geoadd(POSITIONS, (where.lng, where.lat, worker_id))
    pipe.zadd(LAST_SEEN, {worker_id: time.time() if now is None else now})
    pipe.execute()
