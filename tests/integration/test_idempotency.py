"""Every idempotency rule of the contract, through the handlers and under concurrency."""

import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from psycopg import errors

from dispatch import db, idempotency
from dispatch.choice import commands as choice
from dispatch.errors import Code, DispatchError
from dispatch.jobs import commands, photos
from dispatch.jobs.models import Job
from dispatch.jobs.requests import CreateJob, PhotoRequest
from dispatch.models import Resource
from dispatch.offers import inbox
from dispatch.workers import profiles
from dispatch.workers.models import WorkerProfileUpdate
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


def create(conn: db.Connection, key: idempotency.KeyedRequest | None = None) -> Job:
    return commands.create_job(conn, "business-1", CreateJob.model_validate(job_body()), key)


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


KeyedCommand = Callable[[db.Connection, idempotency.KeyedRequest], Resource]


def holding_key(
    url: str, request: idempotency.KeyedRequest, seconds: float, command: KeyedCommand = create
) -> tuple[threading.Thread, list[Resource]]:
    """Another request with the same key, mid-flight: its change and key made now, committed
    after `seconds` (what it made, once made)."""
    made: list[Resource] = []
    claimed = threading.Event()

    def hold() -> None:
        with db.connect(url) as holder, holder.transaction():
            made.append(command(holder, request))
            claimed.set()
            time.sleep(seconds)

    thread = threading.Thread(target=hold)
    thread.start()
    assert claimed.wait(timeout=10)
    return thread, made


def test_a_duplicate_waits_for_the_first_then_replays(
    conn: db.Connection, database_url: str
) -> None:
    request = create_request("slow-key")
    holder, made = holding_key(database_url, request, 0.5)
    answer = idempotency.execute(conn, request, create, 201)
    holder.join()
    assert answer == idempotency.Answer(201, made[0].to_json(), replayed=True)
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 1  # the first's: ours undid itself


def test_a_duplicate_that_waits_too_long_gets_request_in_progress(
    conn: db.Connection, app_conn: db.Connection, database_url: str
) -> None:
    request = create_request("stuck-key")
    holder, _ = holding_key(database_url, request, 3.0)
    with pytest.raises(DispatchError) as caught:
        idempotency.execute(app_conn, request, create, 201)  # the role's lock_timeout: 2 s
    holder.join()
    assert caught.value.code is Code.REQUEST_IN_PROGRESS
    assert count(conn, "SELECT count(*) AS n FROM jobs") == 1  # the holder's only


def test_a_failure_stores_nothing_and_a_retry_runs_again(conn: db.Connection) -> None:
    request = create_request("flaky-key")

    def create_and_fail(c: db.Connection, key: idempotency.KeyedRequest) -> Job:
        # The statement breaks a constraint (no 4xx: a failure of ours) after making the job.
        spec = CreateJob.model_validate(job_body()).model_copy(update={"skills": [None]})
        return commands.create_job(c, "business-1", spec, key)

    with pytest.raises(errors.CheckViolation):
        idempotency.execute(conn, request, create_and_fail, 201)
    # Undone whole: no job, no event, no key; the connection is usable again.
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


# -- every keyed command, each its one statement ------------------------------------------


def keyed_command(api: Api, name: str) -> tuple[KeyedCommand, int]:
    """A command a route runs under its key (worker-1's), ready to run, and its success status."""
    make_worker(api, worker(1))
    if name == "decline":
        job_id = uuid.UUID(make_job(api)["id"])
        return (lambda c, key: inbox.decline(c, job_id, "worker-1", key)), 200
    if name == "apply":
        body = {**job_body(), "assignment": "business_choice"}
        chosen = uuid.UUID(api.call("POST", "/jobs", BUSINESS, body).body["id"])
        return (lambda c, key: choice.apply(c, chosen, "worker-1", "hi", key)), 201
    if name == "skills":
        update = WorkerProfileUpdate(skills=["wash", "paint"])
        return (lambda c, key: profiles.set_skills(c, "worker-1", update, key)), 200
    assert name == "photo"
    request = PhotoRequest(content_type="image/jpeg")
    return (lambda c, key: photos.create_upload(c, "worker-1", request, key)), 201


KEYED_COMMANDS = ["decline", "apply", "skills", "photo"]


@pytest.mark.parametrize("name", KEYED_COMMANDS)
def test_each_command_replays_its_first_answer_once_done(
    api: Api, conn: db.Connection, name: str
) -> None:
    command, status = keyed_command(api, name)
    request = idempotency.KeyedRequest("worker-1", f"{name}-key", "fingerprint", "req")
    first = idempotency.execute(conn, request, command, status)
    again = idempotency.execute(conn, request, command, status)
    assert (first.status, first.replayed, again.replayed) == (status, False, True)
    assert again.body == first.body
    other = idempotency.KeyedRequest("worker-1", f"{name}-key", "another", "req")
    with pytest.raises(DispatchError) as caught:
        idempotency.execute(conn, other, command, status)
    assert caught.value.code is Code.IDEMPOTENCY_KEY_REUSED


@pytest.mark.parametrize("name", KEYED_COMMANDS)
def test_each_command_waits_for_its_twin_then_replays(
    api: Api, conn: db.Connection, database_url: str, name: str
) -> None:
    command, status = keyed_command(api, name)
    request = idempotency.KeyedRequest("worker-1", f"{name}-slow", "fingerprint", "req")
    holder, made = holding_key(database_url, request, 0.5, command)
    answer = idempotency.execute(conn, request, command, status)
    holder.join()
    assert answer == idempotency.Answer(status, made[0].to_json(), replayed=True)


@pytest.mark.parametrize("name", KEYED_COMMANDS)
def test_each_command_whose_twin_takes_too_long_is_in_progress(
    api: Api, app_conn: db.Connection, database_url: str, name: str
) -> None:
    command, status = keyed_command(api, name)
    request = idempotency.KeyedRequest("worker-1", f"{name}-stuck", "fingerprint", "req")
    holder, _ = holding_key(database_url, request, 3.0, command)
    with pytest.raises(DispatchError) as caught:
        idempotency.execute(app_conn, request, command, status)  # the role's lock_timeout: 2 s
    holder.join()
    assert caught.value.code is Code.REQUEST_IN_PROGRESS


# -- the routes of those commands, as a client sees them -----------------------------------


Call = tuple[str, dict[str, Any]]  # a path and a body


def keyed_route(api: Api, name: str) -> tuple[str, Call, Call, int]:
    """A route worker-1 may call under a key: its method, a call, another call of the same
    route (another job, or another body), and its status."""
    make_worker(api, worker(1))
    if name == "decline":
        jobs = [make_job(api)["id"] for _ in range(2)]
        return "POST", (f"/jobs/{jobs[0]}/decline", {}), (f"/jobs/{jobs[1]}/decline", {}), 200
    if name == "apply":
        body = {**job_body(), "assignment": "business_choice"}
        path = f"/jobs/{api.call('POST', '/jobs', BUSINESS, body).body['id']}/applications"
        return "POST", (path, {"note": "hi"}), (path, {"note": "hello"}), 201
    if name == "skills":
        return "PUT", ("/workers/me", {"skills": ["wash"]}), ("/workers/me", {"skills": []}), 200
    assert name == "photo"
    jpeg, png = {"content_type": "image/jpeg"}, {"content_type": "image/png"}
    return "POST", ("/photos", jpeg), ("/photos", png), 201


@pytest.mark.parametrize("name", KEYED_COMMANDS)
def test_each_route_replays_and_refuses_another_request(api: Api, name: str) -> None:
    method, (path, body), (other_path, other_body), status = keyed_route(api, name)
    first = api.call(method, path, worker(1), body, key=f"{name}-route")
    again = api.call(method, path, worker(1), body, key=f"{name}-route")
    assert (first.status, again.status) == (status, status), first.body
    assert again.body == first.body
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers.get("Idempotent-Replayed") == "true"
    if status == 201:
        assert again.headers["Location"] == first.headers["Location"]
    reused = api.call(method, other_path, worker(1), other_body, key=f"{name}-route")
    assert (reused.status, reused.code) == (422, "IDEMPOTENCY_KEY_REUSED")


@pytest.mark.parametrize("name", ["decline", "apply"])
def test_a_refusal_of_those_routes_is_replayed(api: Api, conn: db.Connection, name: str) -> None:
    make_worker(api, worker(1))
    if name == "decline":
        path, code = f"/jobs/{uuid.uuid4()}/decline", "NOT_FOUND"
    else:
        path, code = f"/jobs/{make_job(api)['id']}/applications", "JOB_IS_FIRST_COME"
    refused = api.call("POST", path, worker(1), {}, key=f"{name}-refused")
    assert refused.code == code, refused.body
    again = api.call("POST", path, worker(1), {}, key=f"{name}-refused")
    assert (again.status, again.body) == (refused.status, refused.body)
    assert again.headers.get("Idempotent-Replayed") == "true"
