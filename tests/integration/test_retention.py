"""The retention duty (dispatch.retention, docs/retention.md) on a real Postgres, signed in as
the archivist, with the archive on the S3 stand-in (moto): old finished jobs leave with every
row of them, archived first; a batch is bounded; what the live product needs is never touched;
S3 failing deletes nothing; a run cut between the export and the delete is harmless."""

import gzip
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from psycopg import errors

from dispatch import db, retention
from dispatch_local.gateway import invoke, scheduled_event
from dispatch_local.services import archivist_url
from dispatch_local.template import schedules
from tests.support import BUSINESS, Api, make_job, make_worker, one, step, walk_to, worker

ARCHIVE = "dispatch-test-archive"
Configure = Callable[..., None]

# Every table a job's rows live in, snapshotted as the archive should hold them.
SNAPSHOT = {table: query for table, query in retention.EXPORTS.items()}


@pytest.fixture
def archive(aws_stand_in: str, configure: Configure) -> Any:
    """The archive bucket on moto, emptied; the duty pointed at it."""
    s3 = boto3.client("s3")
    if ARCHIVE not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        s3.create_bucket(Bucket=ARCHIVE)
    for found in s3.list_objects_v2(Bucket=ARCHIVE).get("Contents", []):
        s3.delete_object(Bucket=ARCHIVE, Key=found["Key"])
    configure(ARCHIVE_BUCKET=ARCHIVE, DISPATCH_RETENTION_HOT_DAYS="30")
    return s3


@pytest.fixture
def archivist(conn: db.Connection, database_url: str) -> Iterator[db.Connection]:
    with db.connect(archivist_url(database_url)) as connection:
        assert connection.execute("SELECT current_user AS who").fetchone() == {
            "who": "dispatch_archivist"
        }
        yield connection


def aged(conn: db.Connection, job_ids: list[str], days: int = 31) -> None:
    """As if `days` went by since these jobs last changed, their events long on the bus (the
    owner moves the clock; the product never could)."""
    conn.execute(
        "UPDATE jobs SET updated_at = now() - make_interval(days => %s) WHERE id = ANY(%s)",
        (days, job_ids),
    )
    for table in ("job_events", "offer_events"):
        conn.execute(
            f"UPDATE {table} SET published_at = coalesce(published_at, now() - interval '30 days')"
            " WHERE job_id = ANY(%s)",
            (job_ids,),
        )


def offered_and_declined(conn: db.Connection, job_id: str, who: str) -> None:
    """A wave's rows for an open job, as the offer waves write them (set up by the owner)."""
    conn.execute("INSERT INTO offer_waves (job_id, job_version, wave) VALUES (%s, 1, 0)", (job_id,))
    conn.execute(
        """INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
           VALUES (%s, %s, 1, 0, 120.5)""",
        (job_id, who),
    )
    conn.execute("INSERT INTO job_declines (job_id, worker_id) VALUES (%s, %s)", (job_id, who))
    conn.execute(
        """INSERT INTO offer_events (job_id, type, version, data)
           VALUES (%s, 'job.unfilled', 1, '{"waves": 1, "offered": 1}')""",
        (job_id,),
    )


def raced_then_cancelled(api: Api, conn: db.Connection) -> dict[str, Any]:
    """A job offered to two workers: worker-3 takes it, worker-4 taps Accept and loses the race
    (a job_races_lost row, through the product), then the business cancels it."""
    job = make_job(api)
    for who in (worker(3), worker(4)):
        make_worker(api, who)
        conn.execute(
            """INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
               VALUES (%s, %s, 1, 1, 300)""",
            (job["id"], who[0]),
        )
    taken = api.call("POST", f"/jobs/{job['id']}/accept", worker(3), {})
    assert taken.status == 200, taken.body
    lost = api.call("POST", f"/jobs/{job['id']}/accept", worker(4), {})
    assert (lost.status, lost.body["error"]["code"]) == (409, "JOB_TAKEN")
    return step(api, taken.body, BUSINESS, "cancel")


def rows_of(conn: db.Connection, job_ids: list[str]) -> dict[str, list[Any]]:
    return {
        table: [r["row"] for r in conn.execute(query.sql, {"ids": job_ids})]
        for table, query in SNAPSHOT.items()
    }


def archived(s3: Any) -> dict[str, list[Any]]:
    """Every row in the archive, by table."""
    found: dict[str, list[Any]] = {table: [] for table in SNAPSHOT}
    for item in s3.list_objects_v2(Bucket=ARCHIVE).get("Contents", []):
        body = s3.get_object(Bucket=ARCHIVE, Key=item["Key"])["Body"].read()
        for line in gzip.decompress(body).decode().splitlines():
            record = json.loads(line)
            found[record["table"]].append(record["row"])
    return found


def counts(conn: db.Connection) -> dict[str, int]:
    tables = [*SNAPSHOT, "idempotency_keys", "workers"]
    return {t: one(conn, f"SELECT count(*) AS n FROM {t}")["n"] for t in tables}


def test_every_table_with_a_job_id_is_archived_and_deleted(conn: db.Connection) -> None:
    """A table added later that holds a job's rows must join the archive, or its rows would
    refuse the job's delete (a foreign key) or be lost (none)."""
    with_job_id = {
        r["table_name"]
        for r in conn.execute(
            """SELECT table_name FROM information_schema.columns
                WHERE table_schema = 'public' AND column_name = 'job_id'
                  AND table_name IN (SELECT table_name FROM information_schema.tables
                                      WHERE table_type = 'BASE TABLE')"""
        )
    }
    # Bookkeeping that goes with its job (a foreign key ON DELETE CASCADE: the sweeper's
    # offer_rounds_resumed) is not history: nothing of it is archived.
    cascading = {
        r["table_name"]
        for r in conn.execute(
            """SELECT conrelid::regclass::text AS table_name FROM pg_constraint
                WHERE contype = 'f' AND confrelid = 'jobs'::regclass AND confdeltype = 'c'"""
        )
    }
    assert cascading == {"offer_rounds_resumed"}
    history = with_job_id - cascading
    assert history | {"jobs", "photos"} == set(retention.EXPORTS) == set(retention.DELETES)


def test_old_finished_jobs_leave_with_every_row_archived(
    api: Api, conn: db.Connection, archivist: db.Connection, archive: Any
) -> None:
    completed = walk_to(api, "completed", worker(1))
    open_then_cancelled = make_job(api)
    offered_and_declined(conn, open_then_cancelled["id"], "worker-2")
    cancelled = step(api, open_then_cancelled, BUSINESS, "cancel")
    raced = raced_then_cancelled(api, conn)
    ids = [completed["id"], cancelled["id"], raced["id"]]
    aged(conn, ids)
    before = rows_of(conn, ids)
    assert len(before["photos"]) == 2 and before["job_offers"] and before["job_declines"]
    assert [r["worker_id"] for r in before["job_races_lost"]] == ["worker-4"]

    report = retention.retire(archivist, archive)

    assert (report.jobs_archived, report.batches, report.left) == (3, 1, 0)
    assert report.rows_archived == sum(len(rows) for rows in before.values())
    assert archived(archive) == before  # every row, as it was
    assert all(rows == [] for rows in rows_of(conn, ids).values())  # and gone from the tables


def test_a_batch_is_bounded_and_the_oldest_go_first(
    api: Api, conn: db.Connection, archivist: db.Connection, archive: Any, configure: Configure
) -> None:
    configure(DISPATCH_RETENTION_BATCH_SIZE="3")
    jobs = [step(api, make_job(api), BUSINESS, "cancel") for _ in range(5)]
    for age, job in enumerate(jobs):
        aged(conn, [job["id"]], days=40 - age)  # jobs[0] the oldest

    batch = retention.archive_batch(archivist, archive, ARCHIVE, hot_days=30, batch_size=3)

    assert batch.jobs == 3 and batch.rows["jobs"] == 3
    left = {r["id"] for r in conn.execute("SELECT id::text FROM jobs")}
    assert left == {jobs[3]["id"], jobs[4]["id"]}
    report = retention.retire(archivist, archive)  # the rest: a full batch, then none
    assert (report.jobs_archived, report.batches, report.left) == (2, 1, 0)
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}


def test_what_the_live_product_needs_is_never_touched(
    api: Api, conn: db.Connection, archivist: db.Connection, archive: Any
) -> None:
    """Unfinished jobs (however old), a finished job with an event not yet on the bus, a
    finished job within the hot retention, and the idempotency keys of every call above."""
    still_open = make_job(api)
    held = walk_to(api, "assigned", worker(1))
    working = walk_to(api, "in_progress", worker(2))
    unpublished = step(api, make_job(api), BUSINESS, "cancel")
    recent = step(api, make_job(api), BUSINESS, "cancel")
    aged(conn, [still_open["id"], held["id"], working["id"], unpublished["id"]])
    conn.execute("UPDATE job_events SET published_at = NULL WHERE job_id = %s AND version = 2",
                 (unpublished["id"],))  # fmt: skip
    aged(conn, [recent["id"]], days=29)
    before = counts(conn)
    assert before["idempotency_keys"] > 0

    report = retention.retire(archivist, archive)

    assert (report.jobs_archived, report.left) == (0, 0)
    assert counts(conn) == before
    assert archive.list_objects_v2(Bucket=ARCHIVE).get("KeyCount", 0) == 0


def test_the_archive_failing_deletes_nothing(
    api: Api, conn: db.Connection, archivist: db.Connection, archive: Any
) -> None:
    """No archive, no delete: a bucket that is not there (moto answers NoSuchBucket)."""
    job = walk_to(api, "completed", worker(1))
    aged(conn, [job["id"]])
    before = rows_of(conn, [job["id"]])

    with pytest.raises(archive.exceptions.NoSuchBucket):
        retention.archive_batch(archivist, archive, "no-such-bucket", hot_days=30, batch_size=10)

    assert rows_of(conn, [job["id"]]) == before


def test_a_run_cut_between_the_export_and_the_delete_is_harmless(
    api: Api, conn: db.Connection, archivist: db.Connection, archive: Any, database_url: str
) -> None:
    """The first run writes the archive, then cannot delete (the owner holds the job's row
    past the archivist's lock timeout, as a kill would cut it there): nothing is deleted. The
    next run writes the same object again and deletes: no row lost, none archived twice."""
    job = walk_to(api, "completed", worker(1))
    aged(conn, [job["id"]])
    before = rows_of(conn, [job["id"]])
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with db.connect(database_url) as owner, owner.transaction():
            owner.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (job["id"],))
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(10)
    try:
        with pytest.raises(errors.LockNotAvailable):
            retention.retire(archivist, archive)
    finally:
        release.set()
        holder.join()
    assert rows_of(conn, [job["id"]]) == before  # nothing deleted
    assert archived(archive) == before  # the archive was written first

    report = retention.retire(archivist, archive)

    assert report.jobs_archived == 1
    assert archive.list_objects_v2(Bucket=ARCHIVE)["KeyCount"] == 1  # the same key again
    assert archived(archive) == before
    assert all(rows == [] for rows in rows_of(conn, [job["id"]]).values())


def test_the_local_stack_runs_the_duty_on_its_schedule_as_the_archivist(
    api: Api, conn: db.Connection, archive: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    """The template schedules it hourly; the local stack's scheduler invokes it as it does
    every scheduled function (dispatch_local.gateway), signed in as the archivist. Its
    metrics: the rows archived, the jobs left for the next run."""
    (duty,) = (s for s in schedules() if s.function == "RetentionFunction")
    assert duty.every_seconds == 3600
    job = step(api, make_job(api), BUSINESS, "cancel")
    aged(conn, [job["id"]])
    capfd.readouterr()

    done = invoke(duty, scheduled_event(duty), 60)

    assert done["jobs_archived"] == 1 and done["left"] == 0
    records = [json.loads(line) for line in capfd.readouterr().out.splitlines()
               if line.startswith("{")]  # fmt: skip
    metrics = {name: r[name] for r in records if "_aws" in r
               for name in ("HistoryRowsArchived", "HistoryJobsLeft") if name in r}  # fmt: skip
    assert metrics == {"HistoryRowsArchived": [3.0], "HistoryJobsLeft": [0.0]}  # job, 2 events
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}
    # The handlers' own connection is the application role's again afterwards.
    assert db.connection().execute("SELECT current_user AS who").fetchone() == {
        "who": "dispatch_app"
    }
