"""Every idempotency rule of the contract, through the handlers and under concurrency."""

import threading
import time
import uuid
from functools import partial
from typing import Any

import pytest

from dispatch import db, idempotency
from dispatch.errors import Code, DispatchError
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.jobs.requests import CreateJob
from tests.conftest import empty_the_tables
from tests.integration.test_accept_races import together
from tests.support import BUSINESS, Api, job_body, make_job, make_worker, worker


def count(conn: db.Connection, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    assert row is not None
    return int(row["n"])


def test_a_retried_create_replays_and_creates_once(api: Api, conn: db.Connection) -> None:
    body = job_body()
    first = api.call("POST", "/jobs", BUSINESS, body, key="create-1")
    again = api.call("POST", "/jobs", BUSINESS, body, key="create-1")
    assert (first.status, again.status) == (201, 201)
    assert again.body == first.body
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 1
    assert count(conn, "SELECT count(*) AS n FROM job_events") == 1


def test_a_loser_who_retries_still_hears_job_taken(api: Api, conn: db.Connection) -> None:
    job = make_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
    api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    lost = api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}, key="tap-1")
    assert (lost.status, lost.code) == (409, "JOB_TAKEN")
    # Even if the job became free meanwhile, the same key replays the stored answer.
    conn.execute(
        "UPDATE jobs SET status = 'open', assignee_id = NULL, lease_expires_at = NULL, "
        "version = version + 1"
    )
    again = api.call("POST", f"/jobs/{job['id']}/accept", worker(2), {}, key="tap-1")
    assert (again.status, again.body) == (409, lost.body)
    assert again.headers.get("Idempotent-Replayed") == "true"


@pytest.mark.parametrize("what", ["body", "path"])
def test_same_key_for_another_request_is_refused(api: Api, what: str) -> None:
    first_job = make_job(api)
    make_worker(api, worker(1))
    ok = api.call("POST", f"/jobs/{first_job['id']}/accept", worker(1), {}, key="k")
    assert ok.status == 200
    other_job = make_job(api)["id"] if what == "path" else first_job["id"]
    body = {"version": 2} if what == "body" else {}
    reused = api.call("POST", f"/jobs/{other_job}/accept", worker(1), body, key="k")
    assert (reused.status, reused.code) == (422, "IDEMPOTENCY_KEY_REUSED")


def test_keys_belong_to_their_caller(api: Api, conn: db.Connection) -> None:
    a = api.call("POST", "/jobs", BUSINESS, job_body(), key="shared-key")
    b = api.call("POST", "/jobs", ("business-2", "business"), job_body(), key="shared-key")
    assert (a.status, b.status) == (201, 201)
    assert a.body["id"] != b.body["id"]
    assert "Idempotent-Replayed" not in b.headers
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 2


def test_state_changes_need_a_key(api: Api, conn: db.Connection) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, job_body(), key=None)
    assert (reply.status, reply.code) == (400, "IDEMPOTENCY_KEY_REQUIRED")
    reply = api.call("PUT", "/workers/me", worker(1), {"skills": ["wash"]}, key=None)
    assert (reply.status, reply.code) == (400, "IDEMPOTENCY_KEY_REQUIRED")
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 0


@pytest.mark.parametrize("key", ["", "with space", "ключ", "k" * 256])
def test_malformed_keys_are_refused(api: Api, key: str) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, job_body(), key=key)
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    assert reply.body["error"]["details"][0]["field"] == "Idempotency-Key"


def test_reads_need_no_key(api: Api) -> None:
    job = make_job(api)
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS, key=None).status == 200


# -- concurrency ---------------------------------------------------------------------------


def create_request(key: str) -> idempotency.KeyedRequest:
    return idempotency.KeyedRequest("business-1", key, "fingerprint-create", "req")


def create(conn: db.Connection) -> Job:
    return commands.create_job(conn, "business-1", CreateJob.model_validate(job_body()))


def test_concurrent_duplicates_run_once_and_answer_alike(
    conn: db.Connection, database_url: str
) -> None:
    for _ in range(20):
        empty_the_tables(conn)
        request = create_request(str(uuid.uuid4()))
        answers = together(
            [
                partial(idempotency.execute, request=request, command=create, success_status=201)
                for _ in range(4)
            ],
            database_url,
        )
        assert all(isinstance(a, idempotency.Answer) for a in answers), answers
        assert len({(a.status, a.body) for a in answers}) == 1
        assert sorted(a.replayed for a in answers) == [False, True, True, True]
        assert count(conn, "SELECT count(*) AS n FROM jobs") == 1


def holding_key(
    url: str, request: idempotency.KeyedRequest, seconds: float, answer: str
) -> threading.Thread:
    """Another request with the same key, mid-flight: claimed now, finished after `seconds`."""
    claimed = threading.Event()

    def hold() -> None:
        with db.connect(url) as holder, holder.transaction():
            key = {"principal": request.principal, "key": request.key}
            holder.execute(idempotency.CLAIM_KEY, {**key, "fingerprint": request.fingerprint})
            claimed.set()
            time.sleep(seconds)
            holder.execute(idempotency.STORE_ANSWER, {**key, "status": 201, "body": answer})

    thread = threading.Thread(target=hold)
    thread.start()
    assert claimed.wait(timeout=10)
    return thread


def test_a_duplicate_waits_for_the_first_then_replays(
    conn: db.Connection, database_url: str
) -> None:
    request = create_request("slow-key")
    holder = holding_key(database_url, request, 0.5, '{"first": 1}')
    answer = idempotency.execute(conn, request, create, 201)
    holder.join()
    assert answer == idempotency.Answer(201, '{"first": 1}', replayed=True)
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 0  # our own attempt rolled back


def test_a_duplicate_that_waits_too_long_gets_request_in_progress(
    conn: db.Connection, app_conn: db.Connection, database_url: str
) -> None:
    request = create_request("stuck-key")
    holder = holding_key(database_url, request, 3.0, "{}")
    with pytest.raises(DispatchError) as caught:
        idempotency.execute(app_conn, request, create, 201)  # the role's lock_timeout: 2 s
    holder.join()
    assert caught.value.code is Code.REQUEST_IN_PROGRESS
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 0


class Boom(RuntimeError):
    pass


def test_a_failure_stores_nothing_and_a_retry_runs_again(conn: db.Connection) -> None:
    request = create_request("flaky-key")

    def create_then_fail(c: db.Connection) -> Job:
        create(c)
        raise Boom

    with pytest.raises(Boom):
        idempotency.execute(conn, request, create_then_fail, 201)
    # Rolled back whole: no job, no event, no key; the connection is usable again.
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 0
    assert count(conn, "SELECT count(*) AS n FROM idempotency_keys") == 0
    answer = idempotency.execute(conn, request, create, 201)
    assert (answer.status, answer.replayed) == (201, False)
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 1


def test_keys_expire_after_their_retention(conn: db.Connection) -> None:
    idempotency.execute(conn, create_request("old"), create, 201)
    idempotency.execute(conn, create_request("new"), create, 201)
    conn.execute(
        "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'"
    )
    assert idempotency.expire(conn, older_than_hours=24) == 1
    keys: list[dict[str, Any]] = conn.execute("SELECT key FROM idempotency_keys").fetchall()
    assert keys == [{"key": "new"}]


def test_keys_expire_a_batch_at_a_time_whatever_the_table_holds(conn: db.Connection) -> None:
    conn.execute(
        """INSERT INTO idempotency_keys (principal, key, fingerprint, created_at)
           SELECT 'p', 'k-' || n, 'f', now() - interval '25 hours' - n * interval '1 second'
             FROM generate_series(1, 2500) n"""
    )
    conn.execute("ANALYZE idempotency_keys")
    batch = conn.execute(idempotency.EXPIRE_KEYS, {"hours": 24, "limit": 100}).rowcount
    assert batch == 100
    oldest_left = conn.execute(
        "SELECT max(substr(key, 3)::int) AS n FROM idempotency_keys"
    ).fetchone()
    assert oldest_left == {"n": 2400}  # the hundred oldest went first
    steps = iter([True, False])  # the sweeper's share ends after the second batch
    assert idempotency.expire(conn, 24, batch_size=1000, keep_going=lambda: next(steps)) == 2000
    assert count(conn, "SELECT count(*) AS n FROM idempotency_keys") == 400
    assert idempotency.expire(conn, 24, batch_size=1000) == 400
