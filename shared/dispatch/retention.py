"""The retention duty (docs/retention.md): a finished job leaves the hot tables some days after
its last change, with every row of it, archived first.

One batch is one REPEATABLE READ transaction, as the archivist (dispatch_archivist, migration
0045): pick the oldest finished jobs past the hot retention whose events are all on the bus,
read every row of them, write them to the archive bucket (gzipped JSON lines), then delete
exactly those rows, children first, and commit. The archive is written before anything is
deleted: S3 failing deletes nothing. A run killed between the two leaves the rows in place and
an object that the next run writes again under the same key (the key is the batch's ids), or
beside it when the batch is picked otherwise: a reader keeps one row per table and key. A row
changed by someone else after the batch's snapshot makes its delete fail (serialization
failure, or a child's foreign key): the batch rolls back whole, for the next run.

Idempotency keys are not this duty's: the lease sweeper removes them once past their TTL.
"""

import gzip
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypedDict
from uuid import UUID

from psycopg import errors

from dispatch.config.retention import retention_settings
from dispatch.db import Connection, Query
from dispatch.observability import logger


class RetirableParams(TypedDict):
    hot_days: int
    batch_size: int


class Retirable(TypedDict):
    id: UUID
    updated_at: datetime


# The oldest finished jobs past the hot retention (%(hot_days)s since their last change) whose
# job and offer events are all on the bus: the outbox never loses an event to the archive
# (events_deleted_only_when_published) and no open or held job leaves
# (jobs_deleted_only_when_finished). In updated_at order through jobs_recently_finished, so a
# batch reads its %(batch_size)s jobs and no more however many wait.
RETIRABLE_JOBS: Query[RetirableParams, Retirable] = Query("""
SELECT j.id, j.updated_at
  FROM jobs j
 WHERE dispatch_finished(j.status)
   AND j.updated_at < now() - make_interval(days => %(hot_days)s)
   AND NOT EXISTS (SELECT 1 FROM job_events e
                    WHERE e.job_id = j.id AND e.published_at IS NULL)
   AND NOT EXISTS (SELECT 1 FROM offer_events e
                    WHERE e.job_id = j.id AND e.published_at IS NULL)
 ORDER BY j.updated_at  -- the index's order alone: a tie-break would sort every tied job
 LIMIT %(batch_size)s
""")


class LeftParams(TypedDict):
    hot_days: int
    cap: int


class Left(TypedDict):
    left: int


# How many jobs wait still, counted up to %(cap)s (the run's metric; a count of every old job
# would read the whole backlog every hour).
RETIRABLE_LEFT: Query[LeftParams, Left] = Query("""
SELECT count(*) AS left FROM (
    SELECT 1
      FROM jobs j
     WHERE dispatch_finished(j.status)
       AND j.updated_at < now() - make_interval(days => %(hot_days)s)
       AND NOT EXISTS (SELECT 1 FROM job_events e
                        WHERE e.job_id = j.id AND e.published_at IS NULL)
       AND NOT EXISTS (SELECT 1 FROM offer_events e
                        WHERE e.job_id = j.id AND e.published_at IS NULL)
     LIMIT %(cap)s) waiting
""")


class JobIdsParams(TypedDict):
    ids: list[UUID]


class Exported(TypedDict):
    row: dict[str, Any]


# Every row of the batch's jobs (%(ids)s), table by table, as the archive keeps them. Each
# table a job's history lives in is here; tests/integration/test_retention.py fails when a
# table with a job_id is added and not here.
EXPORT_JOBS: Query[JobIdsParams, Exported] = Query(
    "SELECT to_jsonb(t) AS row FROM jobs t WHERE t.id = ANY(%(ids)s) ORDER BY t.id"
)
EXPORT_JOB_EVENTS: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM job_events t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.version
""")
EXPORT_OFFER_EVENTS: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM offer_events t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.id
""")
EXPORT_JOB_OFFERS: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM job_offers t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.id
""")
EXPORT_OFFER_WAVES: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM offer_waves t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.job_version, t.wave
""")
EXPORT_JOB_DECLINES: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM job_declines t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.worker_id
""")
EXPORT_JOB_RACES_LOST: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM job_races_lost t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.worker_id
""")
EXPORT_JOB_APPLICATIONS: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(t) AS row FROM job_applications t
 WHERE t.job_id = ANY(%(ids)s) ORDER BY t.job_id, t.worker_id
""")
# The evidence's rows (the objects stay in the photo bucket, under its own lifecycle).
EXPORT_PHOTOS: Query[JobIdsParams, Exported] = Query("""
SELECT to_jsonb(p) AS row FROM photos p
 WHERE p.id IN (SELECT j.before_photo_id FROM jobs j WHERE j.id = ANY(%(ids)s)
                UNION
                SELECT j.after_photo_id FROM jobs j WHERE j.id = ANY(%(ids)s))
 ORDER BY p.id
""")
EXPORTS: dict[str, Query[JobIdsParams, Exported]] = {
    "jobs": EXPORT_JOBS,
    "job_events": EXPORT_JOB_EVENTS,
    "offer_events": EXPORT_OFFER_EVENTS,
    "job_offers": EXPORT_JOB_OFFERS,
    "offer_waves": EXPORT_OFFER_WAVES,
    "job_declines": EXPORT_JOB_DECLINES,
    "job_races_lost": EXPORT_JOB_RACES_LOST,
    "job_applications": EXPORT_JOB_APPLICATIONS,
    "photos": EXPORT_PHOTOS,
}


class PhotoIdsParams(TypedDict):
    photo_ids: list[UUID]


class DeleteParams(JobIdsParams, PhotoIdsParams):
    """What every delete of a batch is given (each takes its own of the two)."""


# Exactly the exported rows go, children before their job (the foreign keys), the job's photos
# last, unless another job holds one too (jobs_by_before_photo, jobs_by_after_photo). In the
# batch's snapshot a row added since is not seen, so not deleted: its foreign key then refuses
# the job's delete and the batch rolls back.
DELETE_JOB_EVENTS: Query[JobIdsParams, None] = Query(
    "DELETE FROM job_events WHERE job_id = ANY(%(ids)s)"
)
DELETE_OFFER_EVENTS: Query[JobIdsParams, None] = Query(
    "DELETE FROM offer_events WHERE job_id = ANY(%(ids)s)"
)
# Before the offers they name (job_races_lost_held_an_offer).
DELETE_JOB_RACES_LOST: Query[JobIdsParams, None] = Query(
    "DELETE FROM job_races_lost WHERE job_id = ANY(%(ids)s)"
)
DELETE_JOB_OFFERS: Query[JobIdsParams, None] = Query(
    "DELETE FROM job_offers WHERE job_id = ANY(%(ids)s)"
)
DELETE_OFFER_WAVES: Query[JobIdsParams, None] = Query(
    "DELETE FROM offer_waves WHERE job_id = ANY(%(ids)s)"
)
DELETE_JOB_DECLINES: Query[JobIdsParams, None] = Query(
    "DELETE FROM job_declines WHERE job_id = ANY(%(ids)s)"
)
DELETE_JOB_APPLICATIONS: Query[JobIdsParams, None] = Query(
    "DELETE FROM job_applications WHERE job_id = ANY(%(ids)s)"
)
DELETE_JOBS: Query[JobIdsParams, None] = Query("DELETE FROM jobs WHERE id = ANY(%(ids)s)")
DELETE_PHOTOS: Query[PhotoIdsParams, None] = Query("""
DELETE FROM photos p
 WHERE p.id = ANY(%(photo_ids)s)
   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.before_photo_id = p.id)
   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.after_photo_id = p.id)
""")
DELETES: dict[str, Query[JobIdsParams, None] | Query[PhotoIdsParams, None]] = {
    "job_events": DELETE_JOB_EVENTS,
    "offer_events": DELETE_OFFER_EVENTS,
    "job_races_lost": DELETE_JOB_RACES_LOST,
    "job_offers": DELETE_JOB_OFFERS,
    "offer_waves": DELETE_OFFER_WAVES,
    "job_declines": DELETE_JOB_DECLINES,
    "job_applications": DELETE_JOB_APPLICATIONS,
    "jobs": DELETE_JOBS,
    "photos": DELETE_PHOTOS,
}


# The batch's one transaction reads one snapshot (the module's note).
REPEATABLE_READ: Query[None, None] = Query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


class ArchiveMismatch(Exception):
    """A delete took other rows than the batch exported: the batch rolls back."""


@dataclass(frozen=True)
class Batch:
    key: str | None  # the archive object, None when nothing was due
    jobs: int
    rows: dict[str, int] = field(default_factory=dict)  # deleted, per table


@dataclass(frozen=True)
class RetentionReport:
    jobs_archived: int
    rows_archived: int
    batches: int
    left: int  # jobs still due, counted up to ten batches' worth
    conflicts: int  # batches rolled back for a concurrent change (the next run retries them)


def archive_key(ids: list[Any], first_finished: datetime) -> str:
    """By the day the batch's oldest job finished, named by its ids: the same batch, written
    again after a kill, lands on the same object."""
    digest = hashlib.sha256(",".join(sorted(str(i) for i in ids)).encode()).hexdigest()[:32]
    return f"history/{first_finished:%Y/%m/%d}/{digest}.jsonl.gz"


def _lines(rows: dict[str, list[Any]]) -> bytes:
    text = "".join(
        json.dumps({"table": table, "row": row}, separators=(",", ":"), sort_keys=True) + "\n"
        for table, found in rows.items()
        for row in found
    )
    return gzip.compress(text.encode(), mtime=0)


def archive_batch(conn: Connection, s3: Any, bucket: str, hot_days: int, batch_size: int) -> Batch:
    """One batch: exported, then deleted, in one transaction (see the module's note)."""
    with conn.transaction():
        REPEATABLE_READ.run(conn, None)
        due = RETIRABLE_JOBS.all(conn, {"hot_days": hot_days, "batch_size": batch_size})
        if not due:
            return Batch(None, 0)
        ids = [row["id"] for row in due]
        rows = {table: [r["row"] for r in query.all(conn, {"ids": ids})] for table, query
                in EXPORTS.items()}  # fmt: skip
        key = archive_key(ids, due[0]["updated_at"])
        s3.put_object(
            Bucket=bucket,
            Key=key,
            Body=_lines(rows),
            ContentType="application/x-ndjson",
            ContentEncoding="gzip",
        )
        photo_ids = [row["id"] for row in rows["photos"]]
        deleted: dict[str, int] = {}
        params: DeleteParams = {"ids": ids, "photo_ids": photo_ids}
        for table, statement in DELETES.items():
            deleted[table] = statement.run(conn, params)
            exported = len(rows[table])
            # Every exported row goes (a photo another job holds stays): no more, no fewer.
            if deleted[table] > exported or (table != "photos" and deleted[table] != exported):
                raise ArchiveMismatch(f"{table}: exported {exported}, deleted {deleted[table]}")
    return Batch(key, len(ids), deleted)


def retire(
    conn: Connection, s3: Any, keep_going: Callable[[], bool] = lambda: True
) -> RetentionReport:
    """Batch after batch until one comes back short, one meets a concurrent change, or time
    runs out; then how many jobs wait still."""
    s = retention_settings()
    if not s.archive_bucket:
        raise RuntimeError("ARCHIVE_BUCKET is not set: nothing may be deleted unarchived")
    jobs = rows = batches = conflicts = 0
    while keep_going():
        try:
            batch = archive_batch(conn, s3, s.archive_bucket, s.retention_hot_days,
                                  s.retention_batch_size)  # fmt: skip
        except (errors.SerializationFailure, errors.ForeignKeyViolation) as error:
            # Someone changed a row of the batch after its snapshot (a late rating, say):
            # nothing was deleted; the next run picks it up again.
            logger.warning("retention batch rolled back", extra={"error": repr(error)})
            conflicts += 1
            break
        if batch.key is None:
            break
        batches += 1
        jobs += batch.jobs
        rows += sum(batch.rows.values())
        if batch.jobs < s.retention_batch_size:
            break
    left = RETIRABLE_LEFT.one(
        conn, {"hot_days": s.retention_hot_days, "cap": 10 * s.retention_batch_size}
    )
    return RetentionReport(jobs, rows, batches, int(left["left"]) if left else 0, conflicts)
