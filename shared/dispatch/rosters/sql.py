"""The SQL of rosters, one statement per move. One row per business and worker (the primary
key): a worker is a favourite or blocked, never both."""

from typing import TypedDict

from dispatch.db import Query


# Add a favourite: again, nothing changes (the first added_at stands). A blocked worker stays
# blocked: the statement returns nothing and the caller says why.
class BusinessWorkerParams(TypedDict):
    business_id: str
    worker_id: str


class Entry(TypedDict):
    worker_id: str
    added_at: str


ADD_FAVOURITE: Query[BusinessWorkerParams, Entry] = Query("""
INSERT INTO rosters AS r (business_id, worker_id, list)
VALUES (%(business_id)s, %(worker_id)s, 'favourite')
ON CONFLICT (business_id, worker_id) DO UPDATE SET list = r.list
 WHERE r.list = 'favourite'
RETURNING r.worker_id, dispatch_time(r.added_at) AS added_at
""")

# Block: the stronger word wins (a favourite blocked is a favourite no more); again, nothing
# changes.
BLOCK: Query[BusinessWorkerParams, Entry] = Query("""
INSERT INTO rosters AS r (business_id, worker_id, list)
VALUES (%(business_id)s, %(worker_id)s, 'blocked')
ON CONFLICT (business_id, worker_id) DO UPDATE SET list = 'blocked', added_at = now()
 WHERE r.list <> 'blocked'
RETURNING r.worker_id, dispatch_time(r.added_at) AS added_at
""")


class OnListParams(BusinessWorkerParams):
    list: str


ON_LIST: Query[OnListParams, Entry] = Query("""
SELECT worker_id, dispatch_time(added_at) AS added_at FROM rosters
 WHERE business_id = %(business_id)s AND worker_id = %(worker_id)s AND list = %(list)s
""")

REMOVE: Query[OnListParams, None] = Query("""
DELETE FROM rosters
 WHERE business_id = %(business_id)s AND worker_id = %(worker_id)s AND list = %(list)s
""")


# The caller's own list, oldest first.
class ListParams(TypedDict):
    business_id: str
    list: str
    limit: int


LIST: Query[ListParams, Entry] = Query("""
SELECT worker_id, dispatch_time(added_at) AS added_at FROM rosters
 WHERE business_id = %(business_id)s AND list = %(list)s
 ORDER BY added_at, worker_id
 LIMIT %(limit)s
""")


# Of these candidates (a wave's), those the business blocked.
class AmongParams(TypedDict):
    business_id: str
    worker_ids: list[str]


class WorkerId(TypedDict):
    worker_id: str


BLOCKED_AMONG: Query[AmongParams, WorkerId] = Query("""
SELECT worker_id FROM rosters
 WHERE business_id = %(business_id)s AND list = 'blocked'
   AND worker_id = ANY(%(worker_ids)s::text[])
""")


# The business's favourites (wave 0's candidates; the wave's own statement qualifies them).
class BusinessParams(TypedDict):
    business_id: str


FAVOURITES: Query[BusinessParams, WorkerId] = Query("""
SELECT worker_id FROM rosters WHERE business_id = %(business_id)s AND list = 'favourite'
""")
