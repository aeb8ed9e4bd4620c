"""The ops reads: jobs and fresh workers in a box, the event stream after a cursor (no event
ever skipped or repeated, however the writers' commits interleave), the summary."""

import threading
import time
from functools import partial
from typing import Any
from uuid import UUID

import pytest
import redis

from dispatch import db
from dispatch.jobs import commands
from dispatch.jobs.requests import CreateJob
from tests.integration.test_offers import place
from tests.support import (
    BUSINESS,
    OPS,
    Api,
    in_parallel,
    job_body,
    make_job,
    make_worker,
    walk_to,
    worker,
)

BOX = "77.5,12.9,77.7,13.1"  # around the test jobs at 12.9716, 77.5946


def ops(api: Api, path: str) -> Any:
    reply = api.call("GET", path, OPS)
    assert reply.status == 200, reply.body
    return reply.body


def test_jobs_in_the_box_by_status_oldest_first(api: Api) -> None:
    first, second = make_job(api), make_job(api)
    far = api.call("POST", "/jobs", BUSINESS, job_body(lat=40.0, lng=-3.7)).body
    held = walk_to(api, "assigned", holder=worker("held"))
    done = walk_to(api, "completed", holder=worker("done"))
    live = [j["id"] for j in ops(api, f"/ops/jobs?bbox={BOX}")["jobs"]]
    assert live == [first["id"], second["id"], held["id"]]  # live by default, oldest first
    assert far["id"] not in live
    opened = ops(api, f"/ops/jobs?bbox={BOX}&status=open")["jobs"]
    assert [j["id"] for j in opened] == [first["id"], second["id"]]
    finished = ops(api, f"/ops/jobs?bbox={BOX}&status=completed,cancelled")["jobs"]
    assert [j["id"] for j in finished] == [done["id"]]
    assert finished[0] == api.call("GET", f"/jobs/{done['id']}", OPS).body  # the public Job
    assert len(ops(api, f"/ops/jobs?bbox={BOX}&limit=1")["jobs"]) == 1


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("bbox=1,2,3", "bbox"),
        ("bbox=a,b,c,d", "bbox"),
        ("bbox=77.7,12.9,77.5,13.1", "bbox"),  # corners swapped
        ("bbox=77.5,13.1,77.7,12.9", "bbox"),
        ("bbox=10,10,13,11", "bbox"),  # wider than two degrees
        ("bbox=-181,0,-179,1", "bbox"),
        ("bbox=0,89,1,91", "bbox"),
        ("bbox=nan,1,2,3", "bbox"),
        ("bbox=77.5,12.9,77.7,13.1&status=lost", "status"),
        ("bbox=77.5,12.9,77.7,13.1&limit=0", "limit"),
        ("", "bbox"),
    ],
)
def test_a_bad_box_or_status_is_refused(api: Api, query: str, field: str) -> None:
    reply = api.call("GET", f"/ops/jobs?{query}", OPS)
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert [d["field"] for d in reply.body["error"]["details"]] == [f"query.{field}"]


def test_fresh_workers_in_the_box_idle_or_busy(
    api: Api, conn: db.Connection, cache: redis.Redis
) -> None:
    place(conn, "idle-near", 300)
    place(conn, "stale-near", 400, seen_seconds_ago=3600)
    place(conn, "far-away", 60_000)
    make_worker(api, worker("busy-near"))
    api.call("PUT", "/workers/me/location", worker("busy-near"), {"lat": 12.975, "lng": 77.6})
    job = make_job(api)
    assert api.call("POST", f"/jobs/{job['id']}/accept", worker("busy-near"), {}).status == 200
    found = {w["id"]: w for w in ops(api, f"/ops/workers?bbox={BOX}")["workers"]}
    assert set(found) == {"idle-near", "worker-busy-near"}
    assert (found["idle-near"]["busy"], found["worker-busy-near"]["busy"]) == (False, True)
    where = found["worker-busy-near"]["location"]
    assert where == {"lat": pytest.approx(12.975, abs=1e-5), "lng": pytest.approx(77.6, abs=1e-5)}
    assert found["idle-near"]["seen_at"].endswith("Z")


def test_the_stream_pages_in_the_order_written(api: Api) -> None:
    jobs = [make_job(api) for _ in range(3)]
    newest = ops(api, "/ops/events?limit=2")
    assert [e["job_id"] for e in newest["events"]] == [jobs[1]["id"], jobs[2]["id"]]
    make_worker(api, worker("streamed"))
    api.call("POST", f"/jobs/{jobs[0]['id']}/accept", worker("streamed"), {})
    after = ops(api, f"/ops/events?after={newest['cursor']}")
    assert [(e["type"], e["job_id"]) for e in after["events"]] == [("job.assigned", jobs[0]["id"])]
    assert ops(api, f"/ops/events?after={after['cursor']}")["events"] == []
    quiet = ops(api, f"/ops/events?after={after['cursor']}")
    assert quiet["cursor"] == after["cursor"]  # nothing new: the same place


@pytest.mark.parametrize("cursor", ["nope", "djEuMS4y", "dGFtcGVyZWQ", "x" * 60])
def test_a_cursor_the_server_did_not_issue_is_refused(api: Api, cursor: str) -> None:
    reply = api.call("GET", f"/ops/events?after={cursor}", OPS)
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert reply.body["error"]["details"][0]["field"] == "query.after"


def test_no_event_is_skipped_or_repeated_while_writers_commit_out_of_order(
    api: Api, conn: db.Connection, database_url: str
) -> None:
    """Writers commit in any order, some holding their transaction open a while after writing
    (so a later id commits first: what breaks a naive id cursor), and a reader pages all the
    while; in the end the reader saw every event exactly once, in one stable order."""
    from dispatch.ops import queries

    stop = threading.Event()
    seen: list[UUID] = []

    def read() -> None:
        with db.connect(database_url) as reader:
            page = queries.events_after(reader, None, 500)
            cursor = queries.cursor_of(*queries.ORIGIN)
            while not stop.is_set() or page.events:
                page = queries.events_after(reader, cursor, 50)
                seen.extend(event.id for event in page.events)
                cursor = page.cursor
                if not page.events:
                    time.sleep(0.005)

    def write(n: int) -> None:
        spec = CreateJob.model_validate({**job_body(), "skills": []})
        with db.connect(database_url) as writer:
            for k in range(15):
                with writer.transaction():
                    commands.create_job(writer, f"biz-{n}", spec)
                    if (n + k) % 3 == 0:
                        time.sleep(0.02)  # committed late: younger transactions go first

    reader = threading.Thread(target=read)
    reader.start()
    in_parallel([partial(write, n) for n in range(6)])
    time.sleep(0.05)
    stop.set()
    reader.join(timeout=30)
    written = [
        row["id"] for row in conn.execute("SELECT id FROM job_events ORDER BY tx, id").fetchall()
    ]
    assert len(seen) == len(set(seen)), "an event was repeated"
    assert seen == written, "an event was skipped, or the order moved"
    assert len(written) == 6 * 15


def test_the_summary_of_the_marketplace_now_and_its_last_hour(
    api: Api, conn: db.Connection
) -> None:
    open_job = make_job(api)
    walk_to(api, "assigned", holder=worker("s1"))
    soon = walk_to(api, "assigned", holder=worker("s2"))
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() + interval '2 minutes' WHERE id = %s",
        (soon["id"],),
    )
    walk_to(api, "completed", holder=worker("s3"))
    conn.execute(
        "INSERT INTO offer_events (job_id, type, version, data) VALUES (%s, 'job.unfilled', 1,"
        ' \'{"waves": 3, "offered": 0}\')',
        (open_job["id"],),
    )
    summary = ops(api, "/ops/summary")
    assert summary["jobs_by_status"] == {
        "open": 1, "assigned": 2, "in_progress": 0, "completed": 1, "cancelled": 0, "expired": 0,
    }  # fmt: skip
    assert (summary["filled_last_hour"], summary["unfilled_last_hour"]) == (3, 1)
    assert summary["leases_expiring_in_5_minutes"] == 1
    p50 = summary["time_to_accept_last_hour_s"]["p50"]
    assert p50 is not None and 0 <= p50 < 5  # accepted right after posting, in this test
    assert summary["relay_lag_s"] >= 0
