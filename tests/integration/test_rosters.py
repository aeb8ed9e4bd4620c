"""Rosters: favourites first (a wave 0), blocked never (nearby, offers, accept, apply, assign),
each business's lists its own; the database refuses an assignment to a blocked worker."""

from typing import Any

import psycopg
import pytest
import redis

from dispatch import db
from dispatch.jobs import commands
from dispatch.jobs.requests import CreateJob
from dispatch.offers import waves as offer_waves
from tests.integration.conftest import Waves
from tests.integration.test_business_choice import STRANGER, apply, assign, choice_job
from tests.integration.test_offers import HERE, last_event, offers_of, place
from tests.support import BUSINESS, OPS, Api, job_body, make_worker, worker


def put(api: Api, roster: str, worker_id: str, who: Any = BUSINESS) -> Any:
    return api.call("PUT", f"/businesses/me/{roster}/{worker_id}", who)


def test_each_business_keeps_its_own_rosters(api: Api) -> None:
    first = put(api, "favourites", "worker-1")
    assert first.status == 200 and first.body["worker_id"] == "worker-1"
    assert put(api, "favourites", "worker-1").body == first.body  # idempotent
    assert put(api, "blocked", "worker-2").status == 200
    assert put(api, "favourites", "worker-3", STRANGER).status == 200
    mine = api.call("GET", "/businesses/me/favourites", BUSINESS).body
    assert mine == {"favourites": [first.body]}
    blocked = api.call("GET", "/businesses/me/blocked", BUSINESS).body["blocked"]
    assert [b["worker_id"] for b in blocked] == ["worker-2"]
    theirs = api.call("GET", "/businesses/me/favourites", STRANGER).body["favourites"]
    assert [f["worker_id"] for f in theirs] == ["worker-3"]
    # A blocked worker is no favourite until unblocked; blocking a favourite ends the favour.
    refused = put(api, "favourites", "worker-2")
    assert (refused.status, refused.code) == (409, "WORKER_BLOCKED")
    assert put(api, "blocked", "worker-1").status == 200
    assert api.call("GET", "/businesses/me/favourites", BUSINESS).body == {"favourites": []}
    for roster in ("blocked", "blocked", "favourites"):  # idempotent, absent or not
        reply = api.call("DELETE", f"/businesses/me/{roster}/worker-2", BUSINESS)
        assert reply.status == 204
    assert put(api, "favourites", "worker-2").status == 200


@pytest.mark.parametrize(
    ("method", "path", "who", "status", "code"),
    [
        ("GET", "/businesses/me/favourites", worker(1), 403, "FORBIDDEN"),
        ("GET", "/businesses/me/blocked", OPS, 403, "FORBIDDEN"),
        ("PUT", "/businesses/me/blocked/worker-1", worker(1), 403, "FORBIDDEN"),
        ("DELETE", "/businesses/me/favourites/worker-1", None, 401, "UNAUTHORIZED"),
        # The router takes any segment; the documented pattern refuses control characters.
        ("PUT", "/businesses/me/favourites/x\x7f", BUSINESS, 400, "VALIDATION_FAILED"),
        ("PUT", "/businesses/me/favourites/" + "x" * 129, BUSINESS, 400, "VALIDATION_FAILED"),
    ],
)
def test_who_may_touch_a_roster(
    api: Api, method: str, path: str, who: Any, status: int, code: str
) -> None:
    reply = api.call(method, path, who)
    assert (reply.status, reply.code) == (status, code), reply.body


def test_a_blocked_worker_never_sees_offers_or_takes_the_businesss_jobs(
    api: Api, conn: db.Connection, cache: redis.Redis, waves: Waves
) -> None:
    for n in (1, 2):
        make_worker(api, worker(n))
        api.call("PUT", "/workers/me/location", worker(n), {"lat": HERE[0], "lng": HERE[1]})
    put(api, "blocked", "worker-1")
    mine = api.call("POST", "/jobs", BUSINESS, job_body()).body
    theirs = api.call("POST", "/jobs", STRANGER, job_body()).body
    chosen = choice_job(api)
    nearby = api.call("GET", f"/jobs/nearby?lat={HERE[0]}&lng={HERE[1]}", worker(1)).body
    assert [j["id"] for j in nearby["jobs"]] == [theirs["id"]]
    seen = api.call("GET", f"/jobs/nearby?lat={HERE[0]}&lng={HERE[1]}", worker(2)).body
    assert len(seen["jobs"]) == 3
    waves.run(conn, offer_waves.WaveRequest(job_id=mine["id"], version=1, wave=1))
    assert waves.offered() == ["worker-2"]
    for path, code in (
        (f"/jobs/{mine['id']}/accept", "BLOCKED_BY_BUSINESS"),
        (f"/jobs/{chosen['id']}/applications", "BLOCKED_BY_BUSINESS"),
    ):
        reply = api.call("POST", path, worker(1), {})
        assert (reply.status, reply.code) == (403, code), reply.body
    assert api.call("POST", f"/jobs/{theirs['id']}/accept", worker(1), {}).status == 200


def test_a_blocked_applicant_is_not_listed_picked_or_assigned(
    api: Api, conn: db.Connection
) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    apply(api, job, worker(1))
    put(api, "blocked", "worker-1")
    listed = api.call("GET", f"/jobs/{job['id']}/applications", BUSINESS).body
    assert listed == {"applications": []}
    reply = assign(api, job, BUSINESS, "worker-1")
    assert (reply.status, reply.code) == (403, "APPLICANT_BLOCKED")


def test_the_database_refuses_a_blocked_worker(
    api: Api, conn: db.Connection, app_conn: db.Connection
) -> None:
    job = api.call("POST", "/jobs", BUSINESS, job_body()).body
    chosen = choice_job(api)
    make_worker(api, worker(1))
    put(api, "blocked", "worker-1")
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        app_conn.execute(
            """UPDATE jobs SET status = 'assigned', assignee_id = 'worker-1',
                               lease_expires_at = now() + interval '5 minutes',
                               version = version + 1 WHERE id = %s""",
            (job["id"],),
        )
    assert caught.value.diag.constraint_name == "jobs_never_to_a_blocked_worker"
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        app_conn.execute(
            "INSERT INTO job_applications (job_id, worker_id) VALUES (%s, 'worker-1')",
            (chosen["id"],),
        )
    assert caught.value.diag.constraint_name == "job_applications_not_from_blocked"
    with pytest.raises(psycopg.errors.UniqueViolation):  # on one list at most
        app_conn.execute(
            "INSERT INTO rosters (business_id, worker_id, list)"
            " VALUES ('business-1', 'worker-1', 'favourite')"
        )


def test_favourites_first_a_wave_0_then_the_ordinary_waves(
    conn: db.Connection, cache: redis.Redis, waves: Waves
) -> None:
    place(conn, "near", 500)
    place(conn, "fav-far", 7_000)  # beyond wave 1's 3 km, within the outermost 8 km
    place(conn, "fav-too-far", 9_000)
    place(conn, "fav-stale", 1_000, seen_seconds_ago=3_600)
    place(conn, "fav-unskilled", 1_000, skills=["cook"])
    for favourite in ("fav-far", "fav-too-far", "fav-stale", "fav-unskilled"):
        conn.execute(
            "INSERT INTO rosters (business_id, worker_id, list) VALUES ('business-1', %s,"
            " 'favourite')",
            (favourite,),
        )
    spec = CreateJob.model_validate({**job_body(["wash"], *HERE), "offer_first_to": "favourites"})
    job = commands.create_job(conn, "business-1", spec)
    assert job.offer_first_to == "favourites"
    request = offer_waves.round_for(last_event(conn, job.id))
    assert request is not None and request.wave == 0
    waves.run(conn, request)
    assert waves.offered() == ["fav-far"]
    assert waves.scheduled[-1] == (request.next(), 60)  # the ordinary waves, one interval later
    waves.run(conn, request.next())
    assert waves.offered() == ["fav-far", "near"]
    assert [(o["worker_id"], o["wave"]) for o in offers_of(conn, job.id)] == [
        ("fav-far", 0),
        ("near", 1),
    ]
    plain = commands.create_job(conn, "business-1", CreateJob.model_validate(job_body()))
    opened = offer_waves.round_for(last_event(conn, plain.id))
    assert opened is not None and opened.wave == 1


def test_offer_first_to_takes_only_favourites(api: Api, conn: db.Connection) -> None:
    reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), "offer_first_to": "everyone"})
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
    shown = api.call("POST", "/jobs", BUSINESS, {**job_body(), "offer_first_to": "favourites"})
    assert shown.body["offer_first_to"] == "favourites"
