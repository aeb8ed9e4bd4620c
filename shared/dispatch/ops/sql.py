"""The SQL of the ops reads, each through an index (migration 0011)."""

from typing import Any, TypedDict
from uuid import UUID

from dispatch.db import Query


# Jobs in the box, oldest first: the unfinished ones (jobs_live_by_place), and those that finished
# in the last hour (jobs_recently_finished); each branch's first condition lets the planner
# use its partial index.
class JobsInBoxParams(TypedDict):
    statuses: list[str]
    min_lat: float
    max_lat: float
    min_lng: float
    max_lng: float
    limit: int


class Document(TypedDict):
    document: dict[str, Any]


JOBS_IN_BOX: Query[JobsInBoxParams, Document] = Query("""
SELECT document FROM (
    SELECT dispatch_job_json(j) AS document, j.created_at FROM jobs j
     WHERE dispatch_unfinished(j.status) AND j.status = ANY(%(statuses)s)
       AND j.lat BETWEEN %(min_lat)s AND %(max_lat)s
       AND j.lng BETWEEN %(min_lng)s AND %(max_lng)s
    UNION ALL
    SELECT dispatch_job_json(j), j.created_at FROM jobs j
     WHERE dispatch_finished(j.status) AND j.status = ANY(%(statuses)s)
       AND j.updated_at > now() - interval '1 hour'
       AND j.lat BETWEEN %(min_lat)s AND %(max_lat)s
       AND j.lng BETWEEN %(min_lng)s AND %(max_lng)s
) found
ORDER BY created_at
LIMIT %(limit)s
""")


# Which of these workers hold a live job (through jobs_one_live_job_per_worker).
class BusyParams(TypedDict):
    ids: list[str]


class Assignee(TypedDict):
    assignee_id: str


BUSY_WORKERS: Query[BusyParams, Assignee] = Query("""
SELECT assignee_id FROM jobs
 WHERE assignee_id = ANY(%(ids)s) AND dispatch_live(status)
""")


# Events of finished transactions only (older than every transaction still running: the
# horizon), in (transaction, id) order, so nothing unseen can ever fall before the cursor. Each
# table's page is read through its (tx, id) index and the two merged: a page is %(limit)s rows
# however long the history.
class EventsAfterParams(TypedDict):
    tx: str
    id: UUID
    limit: int


class EventAt(TypedDict):
    tx: str
    id: UUID
    document: dict[str, Any]


EVENTS_AFTER: Query[EventsAfterParams, EventAt] = Query("""
WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
SELECT tx::text AS tx, id, document FROM (
    (SELECT e.tx, e.id, dispatch_event(e) AS document FROM job_events e, horizon
      WHERE e.tx < horizon.xmin AND (e.tx, e.id) > (%(tx)s::text::xid8, %(id)s::uuid)
      ORDER BY e.tx, e.id
      LIMIT %(limit)s)
    UNION ALL
    (SELECT e.tx, e.id, dispatch_event(e) AS document FROM offer_events e, horizon
      WHERE e.tx < horizon.xmin AND (e.tx, e.id) > (%(tx)s::text::xid8, %(id)s::uuid)
      ORDER BY e.tx, e.id
      LIMIT %(limit)s)
) page
ORDER BY page.tx, page.id
LIMIT %(limit)s
""")


# No cursor yet: the newest events, still in the order written.
class LimitParams(TypedDict):
    limit: int


NEWEST_EVENTS: Query[LimitParams, EventAt] = Query("""
WITH horizon AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
SELECT tx::text AS tx, id, document FROM (
    SELECT * FROM (
        (SELECT e.tx, e.id, dispatch_event(e) AS document FROM job_events e, horizon
          WHERE e.tx < horizon.xmin
          ORDER BY e.tx DESC, e.id DESC
          LIMIT %(limit)s)
        UNION ALL
        (SELECT e.tx, e.id, dispatch_event(e) AS document FROM offer_events e, horizon
          WHERE e.tx < horizon.xmin
          ORDER BY e.tx DESC, e.id DESC
          LIMIT %(limit)s)
    ) newest
    ORDER BY newest.tx DESC, newest.id DESC
    LIMIT %(limit)s
) page
ORDER BY page.tx, page.id
""")


# The market now: unfinished jobs by status (jobs_live_by_status), and those that finished in the
# last hour (jobs_recently_finished), as JOBS_IN_BOX shows them. Not every job ever: that count
# grew with history (160 ms at 30 days) and is not what the console is for.
class StatusCount(TypedDict):
    status: str
    n: int


JOBS_BY_STATUS: Query[None, StatusCount] = Query("""
SELECT status, count(*) AS n FROM jobs
 WHERE dispatch_unfinished(status)
 GROUP BY status
UNION ALL
SELECT status, count(*) FROM jobs
 WHERE dispatch_finished(status) AND updated_at > now() - interval '1 hour'
 GROUP BY status
""")


# The last hour, each figure through an index on time (migration 0046), so it reads the last
# hour's rows only: first fills (a job's job.assigned at version 2: job_events_first_fills),
# unfilled rounds (offer_events_unfilled), and the time from posting to first fill, read from
# the event itself (its data is the job, created_at included: no look-up of each job). The
# bound is now() - 1 hour written in each WHERE: the planner estimates it (a CTE's value it
# could not, and expected a third of all assignments).
class LastHour(TypedDict):
    filled: int
    unfilled: int
    p50: float | None
    p90: float | None
    expiring: int


LAST_HOUR: Query[None, LastHour] = Query("""
WITH first_fills AS (
    SELECT e.occurred_at, (e.data->>'created_at')::timestamptz AS posted_at
      FROM job_events e
     WHERE e.type = 'job.assigned' AND e.version = 2
       AND e.occurred_at >= now() - interval '1 hour'
),
waits AS (
    SELECT extract(epoch FROM f.occurred_at - f.posted_at)::float8 AS seconds FROM first_fills f
)
SELECT (SELECT count(*) FROM first_fills) AS filled,
       (SELECT count(*) FROM offer_events o
         WHERE o.type = 'job.unfilled'
           AND o.occurred_at >= now() - interval '1 hour') AS unfilled,
       (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FROM waits) AS p50,
       (SELECT percentile_cont(0.9) WITHIN GROUP (ORDER BY seconds) FROM waits) AS p90,
       (SELECT count(*) FROM jobs
         WHERE status = 'assigned'
           AND lease_expires_at BETWEEN now() AND now() + interval '5 minutes') AS expiring
""")
