"""Fault injection against the real parts: connections killed around an accept's commit,
statement and lock timeouts, Postgres and Redis cut off and brought back. After each fault the
client retries with the same idempotency key, and the history must show exactly one change.

(SQS unreachable at commit, then back: tests/integration/test_outbox.py. Redis down for offer
waves: tests/integration/test_offers.py.)"""

import os
import threading
import time
from typing import Any

import redis

from dispatch import db
from dispatch.errors import CATALOGUE, Code
from tests.faults.proxy import Proxy
from tests.security.test_matrix import CALLERS, EXPECTED, call
from tests.support import Api, Reply, make_job, make_worker, one, upload_photo, worker

WORKER = worker(1)
POLL_SECONDS = 0.01
STALL_SECONDS = 0.5  # how long the planted trigger holds a statement or a commit


def handler_backend() -> int:
    """The backend pid of the connection the in-process handlers use (built if needed)."""
    return int(db.connection().info.backend_pid)


def terminate(conn: db.Connection, pid: int) -> None:
    assert conn.execute("SELECT pg_terminate_backend(%s) AS done", (pid,)).fetchone() == {
        "done": True
    }


def history(conn: db.Connection, job_id: str) -> list[tuple[str, int, str]]:
    rows = conn.execute(
        "SELECT type, version, actor FROM job_events WHERE job_id = %s ORDER BY version", (job_id,)
    )
    return [(r["type"], r["version"], r["actor"]) for r in rows]


def stored_keys(conn: db.Connection, key: str) -> int:
    row = one(conn, "SELECT count(*) AS n FROM idempotency_keys WHERE key = %s", (key,))
    return int(row["n"])


def accept(api: Api, job: dict[str, Any], key: str) -> Reply:
    return api.call("POST", f"/jobs/{job['id']}/accept", WORKER, {}, key=key)


def assert_one_assignment(conn: db.Connection, job: dict[str, Any]) -> None:
    assert history(conn, job["id"]) == [
        ("job.created", 1, "business-1"),
        ("job.assigned", 2, "worker-1"),
    ]
    row = conn.execute("SELECT status, assignee_id, version FROM jobs WHERE id = %s", (job["id"],))
    assert row.fetchone() == {"status": "assigned", "assignee_id": "worker-1", "version": 2}


def test_connection_killed_before_the_accept(api: Api, conn: db.Connection) -> None:
    job = make_job(api)
    make_worker(api, WORKER)
    terminate(conn, handler_backend())
    first = accept(api, job, "k-before")
    assert first.status == 200  # the dead connection is found, rebuilt, and the work runs once
    again = accept(api, job, "k-before")
    assert (again.status, again.body) == (200, first.body)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert_one_assignment(conn, job)


def test_connection_killed_during_the_commit(api: Api, conn: db.Connection) -> None:
    """A deferred trigger (planted for the test) stalls the COMMIT; the backend is killed
    while it stalls, so that transaction never commits. The client's retry, with the same key,
    makes the change exactly once."""
    job = make_job(api)
    make_worker(api, WORKER)
    conn.execute(f"""
        CREATE FUNCTION stall_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep({STALL_SECONDS}); RETURN NULL; END $$;
        CREATE CONSTRAINT TRIGGER stall_commit AFTER INSERT ON job_events
            DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION stall_commit();
    """)
    pid = handler_backend()
    killed = threading.Event()

    def kill_when_committing() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchone()
            if row and row["wait_event"] == "PgSleep":
                terminate(conn, pid)
                killed.set()
                return
            time.sleep(POLL_SECONDS)

    killer = threading.Thread(target=kill_when_committing)
    try:
        killer.start()
        first = accept(api, job, "k-during")
        killer.join()
    finally:
        conn.execute("DROP TRIGGER stall_commit ON job_events; DROP FUNCTION stall_commit()")
    assert killed.is_set(), "the commit was never caught stalling"
    # The handler rebuilt its connection and ran the unit of work again (db.run): one commit.
    assert first.status == 200, first.body
    again = accept(api, job, "k-during")
    assert (again.status, again.body) == (200, first.body)
    assert_one_assignment(conn, job)


def test_connection_killed_right_after_the_commit(api: Api, conn: db.Connection) -> None:
    """The change committed but the answer never reached the client, and the connection died:
    the retry replays the stored answer and changes nothing."""
    job = make_job(api)
    make_worker(api, WORKER)
    lost = accept(api, job, "k-after")  # committed; pretend the client never heard
    terminate(conn, handler_backend())
    again = accept(api, job, "k-after")
    assert (again.status, again.body) == (200, lost.body)
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert_one_assignment(conn, job)


def test_a_lock_timeout_is_503_and_writes_nothing(
    api: Api, conn: db.Connection, database_url: str, role_timeouts: Any
) -> None:
    role_timeouts(lock_timeout_ms=200)
    job = make_job(api)
    make_worker(api, WORKER)
    with db.connect(database_url) as holder, holder.transaction():
        holder.execute("SELECT 1 FROM jobs WHERE id = %s FOR UPDATE", (job["id"],))
        stuck = accept(api, job, "k-lock")
    assert (stuck.status, stuck.code) == (503, "UNAVAILABLE")
    assert stuck.body["error"]["message"] == CATALOGUE[Code.UNAVAILABLE].message
    assert history(conn, job["id"]) == [("job.created", 1, "business-1")]
    assert conn.execute(
        "SELECT count(*) AS n FROM idempotency_keys WHERE key = 'k-lock'"
    ).fetchone() == {"n": 0}
    retry = accept(api, job, "k-lock")  # a 503 is not stored: the retry runs
    assert retry.status == 200
    assert_one_assignment(conn, job)


def test_a_statement_timeout_is_503_and_writes_nothing(
    api: Api, conn: db.Connection, role_timeouts: Any
) -> None:
    job = make_job(api)
    make_worker(api, WORKER)
    role_timeouts(statement_timeout_ms=int(STALL_SECONDS * 1000 / 5))
    conn.execute(f"""
        CREATE FUNCTION stall_update() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_sleep({STALL_SECONDS}); RETURN NEW; END $$;
        CREATE TRIGGER stall_update BEFORE UPDATE ON jobs
            FOR EACH ROW EXECUTE FUNCTION stall_update();
    """)
    try:
        slow = accept(api, job, "k-slow")
    finally:
        conn.execute("DROP TRIGGER stall_update ON jobs; DROP FUNCTION stall_update()")
    assert (slow.status, slow.code) == (503, "UNAVAILABLE")
    assert history(conn, job["id"]) == [("job.created", 1, "business-1")]
    assert conn.execute(
        "SELECT count(*) AS n FROM idempotency_keys WHERE key = 'k-slow'"
    ).fetchone() == {"n": 0}
    assert accept(api, job, "k-slow").status == 200
    assert_one_assignment(conn, job)


def test_postgres_unreachable_is_503_everywhere_then_recovers(
    api: Api, conn: db.Connection, cache: redis.Redis, postgres_proxy: Proxy
) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    photo = upload_photo(api, worker(1))
    postgres_proxy.cut()
    down = {}
    for route, row in EXPECTED.items():
        # A caller the route lets in (an answer other than FORBIDDEN or NOT_FOUND); where
        # everyone is refused on the seeded data (withdrawing an application nobody made),
        # a caller of the role it admits: the database decides that NOT_FOUND.
        allowed = [c for c, e in zip(CALLERS, row, strict=True) if e != "FORBIDDEN"]
        caller = next(
            (c for c, e in zip(CALLERS, row, strict=True) if e not in ("FORBIDDEN", "NOT_FOUND")),
            allowed[0],
        )
        down[route] = call(api, route, CALLERS[caller], job, photo)
    # Locations live in Redis only: that route does not need Postgres at all.
    assert down.pop("location").status == 204
    for route, reply in down.items():
        assert (reply.status, reply.code) == (503, "UNAVAILABLE"), (route, reply.body)
        assert reply.body["error"]["message"] == CATALOGUE[Code.UNAVAILABLE].message

    postgres_proxy.restore()  # no restart, no cache cleared: the next request reconnects
    assert api.call("GET", "/health").status == 200
    assert api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).status == 200
    assert api.call("GET", f"/jobs/{job['id']}", worker(1)).body["status"] == "assigned"


def test_redis_unreachable_degrades_locations_only_then_recovers(
    api: Api, conn: db.Connection, redis_proxy: Proxy
) -> None:
    here = {"lat": 12.97, "lng": 77.59}
    make_worker(api, WORKER)
    assert api.call("PUT", "/workers/me/location", WORKER, here).status == 204
    redis_proxy.cut()
    down = api.call("PUT", "/workers/me/location", WORKER, here)
    assert (down.status, down.code) == (503, "UNAVAILABLE")
    job = make_job(api)
    assert api.call("POST", f"/jobs/{job['id']}/accept", WORKER, {}).status == 200
    redis_proxy.restore()
    assert api.call("PUT", "/workers/me/location", WORKER, here).status == 204
    assert os.environ["REDIS_URL"].startswith("redis://127.0.0.1:")
