"""The business chooses: apply, withdraw, the applicants listed, and the assign, through the
real handlers; the assign's races in parallel; the database's own guards, bypassing the app."""

import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any
from uuid import UUID

import psycopg
import pytest
import redis

from dispatch import db, idempotency
from dispatch.choice import commands as choice
from dispatch.errors import DispatchError
from dispatch.jobs import commands
from dispatch.jobs.requests import CreateJob
from tests.integration.test_accept_races import together
from tests.support import (
    BUSINESS,
    OPS,
    Api,
    Who,
    job_body,
    make_worker,
    step,
    sweep_now,
    walk_to,
    worker,
)

STRANGER = ("business-2", "business")


def choice_job(api: Api, owner: Who = BUSINESS, **settings: Any) -> dict[str, Any]:
    reply = api.call(
        "POST", "/jobs", owner, {**job_body(), "assignment": "business_choice", **settings}
    )
    assert reply.status == 201, reply.body
    job: dict[str, Any] = reply.body
    return job


def apply(api: Api, job: dict[str, Any], who: Who, body: Any = None) -> Any:
    return api.call("POST", f"/jobs/{job['id']}/applications", who, {} if body is None else body)


def assign(
    api: Api, job: dict[str, Any], who: Who, worker_id: str, version: int | None = None
) -> Any:
    body = {"worker_id": worker_id, "version": job["version"] if version is None else version}
    return api.call("POST", f"/jobs/{job['id']}/assign", who, body)


def applicants(api: Api, job: dict[str, Any], who: Who = BUSINESS) -> Any:
    return api.call("GET", f"/jobs/{job['id']}/applications", who)


def test_the_job_says_how_it_is_assigned(api: Api) -> None:
    first = api.call("POST", "/jobs", BUSINESS, job_body()).body
    assert (first["assignment"], first["auto_pick"], first["choose_within_s"]) == (
        "first_come",
        None,
        None,
    )
    chosen = choice_job(api)
    assert (chosen["assignment"], chosen["auto_pick"], chosen["choose_within_s"]) == (
        "business_choice",
        False,
        None,
    )
    picked = choice_job(api, auto_pick=True, choose_within_s=600)
    assert (picked["auto_pick"], picked["choose_within_s"]) == (True, 600)
    assert api.call("GET", f"/jobs/{picked['id']}", BUSINESS).body == picked


@pytest.mark.parametrize(
    "settings",
    [
        {"assignment": "first_come", "auto_pick": False},
        {"choose_within_s": 60},  # first come by default: no deadline to choose by
        {"assignment": "business_choice", "auto_pick": True},  # no moment to pick at
        {"assignment": "business_choice", "choose_within_s": 0},
        {"assignment": "business_choice", "choose_within_s": "60"},
        {"assignment": "business_choice", "auto_pick": "yes", "choose_within_s": 60},
        {"assignment": "whoever"},
        {"assignment": None},
    ],
)
def test_bad_choice_settings_are_400(api: Api, conn: db.Connection, settings: Any) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), **settings})
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), reply.body
    assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone() == {"n": 0}


def test_accept_on_a_choice_job_says_the_business_chooses(api: Api) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    assert (reply.status, reply.code) == (409, "BUSINESS_CHOOSES")
    apply(api, job, worker(1))  # even an applicant does not accept: the business chooses
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {})
    assert (reply.status, reply.code) == (409, "BUSINESS_CHOOSES")


def test_apply_is_idempotent_per_worker_and_job(api: Api, conn: db.Connection) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    first = apply(api, job, worker(1), {"note": "Ten years of washing.\nAvailable all day."})
    assert first.status == 201, first.body
    assert first.body["job_id"] == job["id"] and first.body["worker_id"] == "worker-1"
    assert first.body["note"].startswith("Ten years")
    again = apply(api, job, worker(1), {"note": "another note"})  # another key, same worker
    assert (again.status, again.body) == (201, first.body)
    events = conn.execute(
        "SELECT type, actor, version FROM offer_events WHERE job_id = %s", (job["id"],)
    ).fetchall()
    assert events == [{"type": "application.created", "actor": "worker-1", "version": 1}]


@pytest.mark.parametrize(
    ("prepare", "code", "status"),
    [
        ("first come", "JOB_IS_FIRST_COME", 409),
        ("no skill", "SKILLS_MISSING", 403),
        ("assigned", "JOB_TAKEN", 409),
        ("cancelled", "JOB_UNAVAILABLE", 409),
        ("missing", "NOT_FOUND", 404),
    ],
)
def test_who_cannot_apply(
    api: Api, conn: db.Connection, prepare: str, code: str, status: int
) -> None:
    make_worker(api, worker(1), ["cook"] if prepare == "no skill" else ["wash"])
    make_worker(api, worker(2))
    if prepare == "first come":
        job = api.call("POST", "/jobs", BUSINESS, job_body()).body
    else:
        job = choice_job(api)
    if prepare == "assigned":
        apply(api, job, worker(2))
        job = assign(api, job, BUSINESS, "worker-2").body
    if prepare == "cancelled":
        step(api, job, BUSINESS, "cancel")
    if prepare == "missing":
        job = {**job, "id": str(uuid.uuid4())}
    reply = apply(api, job, worker(1))
    assert (reply.status, reply.code) == (status, code), reply.body
    assert conn.execute(
        "SELECT count(*) AS n FROM job_applications WHERE worker_id = 'worker-1'"
    ).fetchone() == {"n": 0}


@pytest.mark.parametrize(
    ("note", "status"),
    [
        ("'; DROP TABLE job_applications; --", 201),
        ("\u202eraw\u202c wa\u200bsh 🧽", 201),
        ("line one\nline two\ttabbed", 201),
        ("x" * 280, 201),
        ("x" * 281, 400),
        ("nul\u0000", 400),
        ("bell\u0007", 400),
        ("csi\u009b", 400),  # C1 controls too (found from outside)
        ("next line\u0085", 400),
        ("no-break\u00a0space", 201),
        (7, 400),
    ],
)
def test_hostile_notes(api: Api, conn: db.Connection, note: Any, status: int) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    reply = apply(api, job, worker(1), {"note": note})
    assert reply.status == status, reply.body
    stored = conn.execute("SELECT note FROM job_applications").fetchall()
    if status == 201:
        assert reply.body["note"] == note and stored == [{"note": note}]
        assert applicants(api, job).body["applications"][0]["note"] == note
    else:
        assert reply.code == "VALIDATION_FAILED" and stored == []


def test_withdraw_and_apply_again(api: Api, conn: db.Connection) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    never = api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(1))
    assert (never.status, never.code) == (404, "NOT_FOUND")
    apply(api, job, worker(1))
    assert api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(1)).status == 204
    assert api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(1)).status == 204
    assert applicants(api, job).body == {"applications": []}
    reply = assign(api, job, BUSINESS, "worker-1")
    assert (reply.status, reply.code) == (409, "NOT_AN_APPLICANT")
    assert apply(api, job, worker(1)).status == 201
    assert [a["worker_id"] for a in applicants(api, job).body["applications"]] == ["worker-1"]
    types = [
        r["type"]
        for r in conn.execute(
            "SELECT type FROM offer_events WHERE job_id = %s ORDER BY occurred_at, id",
            (job["id"],),
        )
    ]
    assert types == ["application.created", "application.withdrawn", "application.created"]


def test_the_holder_releases_instead_of_withdrawing(api: Api) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    apply(api, job, worker(1))
    assign(api, job, BUSINESS, "worker-1")
    reply = api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(1))
    assert (reply.status, reply.code) == (409, "ILLEGAL_TRANSITION")


def test_the_business_sees_what_it_needs_to_choose(
    api: Api, conn: db.Connection, cache: redis.Redis
) -> None:
    for n in (1, 2, 3):
        make_worker(api, worker(n))
    # worker-1: one completed job, a rating, one job given back; worker-2: vanished once.
    walk_to(api, "completed", worker(1))
    conn.execute("UPDATE workers SET ratings = 1, stars = 5 WHERE id = 'worker-1'")
    released = api.call("POST", "/jobs", BUSINESS, job_body()).body
    held = api.call("POST", f"/jobs/{released['id']}/accept", worker(1), {}).body
    step(api, held, worker(1), "release")
    lapsed = api.call("POST", "/jobs", BUSINESS, job_body()).body
    api.call("POST", f"/jobs/{lapsed['id']}/accept", worker(2), {})
    conn.execute(
        "UPDATE jobs SET lease_expires_at = now() - interval '1 s' WHERE id = %s", (lapsed["id"],)
    )
    sweep_now()
    job = choice_job(api)
    api.call("PUT", "/workers/me/location", worker(1), {"lat": 12.9716 + 0.01, "lng": 77.5946})
    apply(api, job, worker(1), {"note": "hello"})
    apply(api, job, worker(2))
    apply(api, job, worker(3))
    conn.execute("UPDATE workers SET skills = '{cook}' WHERE id = 'worker-3'")  # lost the skill
    listed = applicants(api, job)
    assert listed.status == 200, listed.body
    first, second, third = listed.body["applications"]
    assert first["worker_id"] == "worker-1" and first["note"] == "hello"
    assert first["rating"] == 4.17 and 1_100 < first["distance_m"] < 1_125
    assert (first["completed_jobs"], first["released"], first["vanished"]) == (1, 1, 0)
    assert (first["busy"], first["qualified"], first["assigned"]) == (False, True, False)
    assert (second["rating"], second["distance_m"], second["vanished"]) == (None, None, 1)
    assert third["qualified"] is False
    assert list(first) == [
        "worker_id",
        "applied_at",
        "note",
        "rating",
        "distance_m",
        "completed_jobs",
        "released",
        "vanished",
        "busy",
        "qualified",
        "assigned",
    ]
    assert applicants(api, job, OPS).body == listed.body


def test_assign_leaves_the_job_as_an_accept_would(api: Api, conn: db.Connection) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    apply(api, job, worker(1))
    reply = assign(api, job, BUSINESS, "worker-1")
    assert reply.status == 200, reply.body
    assigned = reply.body
    assert (assigned["status"], assigned["assignee_id"], assigned["version"]) == (
        "assigned",
        "worker-1",
        2,
    )
    assert assigned["lease_expires_at"] is not None
    assert api.call("GET", f"/jobs/{job['id']}", worker(1)).body == assigned
    events = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS).body["events"]
    assert [(e["type"], e["actor"]) for e in events] == [
        ("job.created", "business-1"),
        ("application.created", "worker-1"),  # what push told the business, pulled
        ("job.assigned", "business-1"),  # who chose
    ]
    listed = applicants(api, job).body["applications"]
    assert [(a["worker_id"], a["assigned"]) for a in listed] == [("worker-1", True)]
    # The holder works it as any holder would.
    checked_in = step(api, assigned, worker(1), "check_in")
    assert checked_in["status"] == "assigned"


def test_who_cannot_be_assigned(api: Api, conn: db.Connection) -> None:
    job = choice_job(api)
    for n in (1, 2, 3, 4):
        make_worker(api, worker(n))
    for n in (1, 2, 3):
        apply(api, job, worker(n))
    # worker-1 took another job meanwhile; worker-2 lost the skill; worker-4 never applied.
    other = api.call("POST", "/jobs", BUSINESS, job_body()).body
    assert api.call("POST", f"/jobs/{other['id']}/accept", worker(1), {}).status == 200
    api.call("PUT", "/workers/me", worker(2), {"skills": ["cook"]})
    cases = [
        (BUSINESS, "worker-1", None, 409, "APPLICANT_BUSY"),
        (BUSINESS, "worker-2", None, 403, "APPLICANT_NOT_QUALIFIED"),
        (BUSINESS, "worker-4", None, 409, "NOT_AN_APPLICANT"),
        (BUSINESS, "worker-3", 7, 409, "VERSION_CONFLICT"),
        (STRANGER, "worker-3", None, 404, "NOT_FOUND"),
    ]
    for who, worker_id, version, status, code in cases:
        reply = assign(api, job, who, worker_id, version)
        assert (reply.status, reply.code) == (status, code), (worker_id, reply.body)
    lacking = assign(api, job, BUSINESS, "worker-2")
    assert lacking.body["error"]["details"] == [
        {"field": "worker_id", "problem": "lacks a skill the job needs"}
    ]
    reply = assign(api, other, BUSINESS, "worker-3")
    assert (reply.status, reply.code) == (409, "JOB_IS_FIRST_COME")
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["version"] == 1  # untouched
    assert assign(api, job, BUSINESS, "worker-3").status == 200
    again = assign(api, job, BUSINESS, "worker-3", version=2)
    assert (again.status, again.code) == (409, "JOB_ALREADY_ASSIGNED")


# -- races -------------------------------------------------------------------------------------


def setup_choice(conn: db.Connection, workers: list[str]) -> UUID:
    conn.execute("TRUNCATE jobs, job_events, idempotency_keys, workers, offer_events CASCADE")
    for w in workers:
        conn.execute("INSERT INTO workers (id, skills) VALUES (%s, '{wash}')", (w,))
    spec = CreateJob.model_validate(
        {
            **job_body(["wash"]),
            "assignment": "business_choice",
            "auto_pick": True,
            "choose_within_s": 600,
        }
    )
    job_id = commands.create_job(conn, "business-1", spec).id
    for w in workers:
        choice.apply(conn, job_id, w, None)
    return job_id


def assign_call(
    job_id: UUID, chooser: str, worker_id: str, version: int | None
) -> Callable[[db.Connection], Any]:
    request = idempotency.KeyedRequest(chooser, str(uuid.uuid4()), "fp-" + worker_id, "r")

    def call(conn: db.Connection) -> Any:
        if chooser == choice.AUTO_PICK:  # the sweeper's pick: no key, no version
            try:
                choice.assign(conn, job_id, chooser, worker_id, None, business_id="business-1")
                return 200
            except DispatchError as error:
                return error.code.value
        answer = idempotency.execute(
            conn,
            request,
            lambda c, key: choice.assign(c, job_id, chooser, worker_id, version, key=key),
            200,
        )
        return answer.status if answer.status == 200 else answer.body

    return call


def test_two_assigns_at_once_one_winner(conn: db.Connection, database_url: str) -> None:
    outcomes: Counter[str] = Counter()
    for _ in range(25):
        job_id = setup_choice(conn, ["w-1", "w-2"])
        results = together(
            [assign_call(job_id, "business-1", w, 1) for w in ("w-1", "w-2")], database_url
        )
        assert results.count(200) == 1, results
        (lost,) = [r for r in results if r != 200]
        assert "JOB_ALREADY_ASSIGNED" in lost, lost
        outcomes.update(str(r)[:40] for r in results)
        row = conn.execute("SELECT version, assignee_id FROM jobs").fetchone()
        assert row is not None and row["version"] == 2 and row["assignee_id"] in ("w-1", "w-2")
        assert conn.execute(
            "SELECT count(*) AS n FROM job_events WHERE type = 'job.assigned'"
        ).fetchone() == {"n": 1}


def test_an_assign_racing_the_auto_pick_one_winner(conn: db.Connection, database_url: str) -> None:
    winners: Counter[str] = Counter()
    for _ in range(25):
        job_id = setup_choice(conn, ["w-1", "w-2"])
        results = together(
            [
                assign_call(job_id, "business-1", "w-1", 1),
                assign_call(job_id, choice.AUTO_PICK, "w-2", None),
            ],
            database_url,
        )
        assert sum(1 for r in results if r == 200) == 1, results
        (lost,) = [r for r in results if r != 200]
        assert "JOB_ALREADY_ASSIGNED" in str(lost), lost
        row = conn.execute("SELECT actor FROM job_events WHERE type = 'job.assigned'").fetchall()
        assert len(row) == 1
        winners[row[0]["actor"]] += 1
    assert set(winners) <= {"business-1", choice.AUTO_PICK}


def test_withdraw_racing_the_assign_never_assigns_a_withdrawn_worker(
    conn: db.Connection, database_url: str
) -> None:
    for _ in range(25):
        job_id = setup_choice(conn, ["w-1"])

        def withdraw(c: db.Connection, job_id: UUID = job_id) -> str:
            try:
                choice.withdraw(c, job_id, "w-1")
                return "withdrew"
            except DispatchError as error:
                return error.code.value

        results = together([assign_call(job_id, "business-1", "w-1", 1), withdraw], database_url)
        row = conn.execute(
            """SELECT j.assignee_id, a.withdrawn_at IS NOT NULL AS withdrawn
                 FROM jobs j JOIN job_applications a ON a.job_id = j.id"""
        ).fetchone()
        assert row is not None
        # Exactly one of the two took effect: assigned (the withdrawal refused) or withdrawn.
        assert (row["assignee_id"] == "w-1") != row["withdrawn"], (results, row)


# -- the database's own guards, bypassing the application ----------------------------------


def test_the_database_assigns_a_choice_job_only_to_an_applicant(
    api: Api, app_conn: db.Connection
) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    make_worker(api, worker(2))
    apply(api, job, worker(2))
    take = """UPDATE jobs SET status = 'assigned', assignee_id = %(w)s,
                              lease_expires_at = now() + interval '5 minutes',
                              version = version + 1
               WHERE id = %(id)s"""
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        app_conn.execute(take, {"w": "worker-1", "id": job["id"]})
    assert caught.value.diag.constraint_name == "jobs_choice_goes_to_an_applicant"
    app_conn.execute(
        "UPDATE job_applications SET withdrawn_at = now() WHERE worker_id = 'worker-2'"
    )
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        app_conn.execute(take, {"w": "worker-2", "id": job["id"]})
    assert caught.value.diag.constraint_name == "jobs_choice_goes_to_an_applicant"


def test_the_database_takes_applications_only_while_the_business_chooses(
    api: Api, app_conn: db.Connection
) -> None:
    first_come = api.call("POST", "/jobs", BUSINESS, job_body()).body
    taken = choice_job(api)
    make_worker(api, worker(1))
    apply(api, taken, worker(1))
    assign(api, taken, BUSINESS, "worker-1")
    for job in (first_come, taken):
        with pytest.raises(psycopg.errors.CheckViolation) as caught:
            app_conn.execute(
                "INSERT INTO job_applications (job_id, worker_id) VALUES (%s, 'worker-9')",
                (job["id"],),
            )
        assert caught.value.diag.constraint_name == "job_applications_only_while_choosing"
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        app_conn.execute(
            "INSERT INTO job_applications (job_id, worker_id, note) VALUES (%s, 'w', %s)",
            (taken["id"], "x" * 281),
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app_conn.execute("UPDATE jobs SET assignment = 'first_come'")


@pytest.mark.parametrize(
    ("change", "constraint"),
    [
        ("assignment = 'auction'", "jobs_assignment_valid"),
        ("auto_pick = false", "jobs_choice_settings_only_for_choice"),
        ("choose_within_s = 60", "jobs_choice_settings_only_for_choice"),
        (
            "assignment = 'business_choice', auto_pick = true",
            "jobs_auto_pick_needs_a_deadline",
        ),
        ("choose_by = now()", "jobs_choose_by_iff_deadline"),
        (
            "assignment = 'business_choice', auto_pick = false, choose_within_s = 0,"
            " choose_by = now()",
            "jobs_choose_within_positive",
        ),
        (
            "assignment = 'business_choice', auto_pick = false, choose_within_s = 60",
            "jobs_choose_by_iff_deadline",
        ),
    ],
)
def test_the_choice_settings_are_checked_by_the_database(
    api: Api, conn: db.Connection, change: str, constraint: str
) -> None:
    job = api.call("POST", "/jobs", BUSINESS, job_body()).body
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        conn.execute(f"UPDATE jobs SET {change} WHERE id = %s", (job["id"],))
    assert caught.value.diag.constraint_name == constraint


def test_each_pulls_what_push_tells_them_of_a_job(api: Api) -> None:
    """GET /jobs/{job_id}/events is push's source of truth: the business (and ops) pull every
    event of its job, applications included; the assignee its job's changes and the events
    that name it, never another applicant's."""
    job = choice_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
        assert apply(api, job, worker(n)).status == 201
    assert api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(2)).status == 204
    assert assign(api, job, BUSINESS, "worker-1").status == 200

    def pulled(who: Who) -> list[tuple[str, str]]:
        events = api.call("GET", f"/jobs/{job['id']}/events", who).body["events"]
        return [(e["type"], e["actor"]) for e in events]

    everything = [
        ("job.created", "business-1"),
        ("application.created", "worker-1"),
        ("application.created", "worker-2"),
        ("application.withdrawn", "worker-2"),
        ("job.assigned", "business-1"),
    ]
    assert pulled(BUSINESS) == pulled(OPS) == everything
    assert pulled(worker(1)) == [
        ("job.created", "business-1"),
        ("application.created", "worker-1"),
        ("job.assigned", "business-1"),
    ]
    # Not the job of the one who withdrew, nor of another business: 404, as for the job.
    for stranger in (worker(2), STRANGER):
        reply = api.call("GET", f"/jobs/{job['id']}/events", stranger)
        assert (reply.status, reply.code) == (404, "NOT_FOUND")
