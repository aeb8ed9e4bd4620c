"""Ratings: the owning business rates completed work once; a worker's rating is a damped
average that offers rank by; a job may ask for a minimum rating, which nearby, offers and
accept all respect."""

from typing import Any
from uuid import UUID

from dispatch import db
from dispatch.errors import DispatchError
from dispatch.events import Event
from dispatch.jobs import commands
from dispatch.offers.models import WaveRequest
from dispatch.workers import locations
from dispatch.workers.models import WorkerPosition
from tests.integration.conftest import Waves
from tests.integration.test_offers import HERE, first_wave, place
from tests.support import (
    BUSINESS,
    Api,
    destination,
    in_parallel,
    job_body,
    make_job,
    walk_to,
    worker,
)

OTHER_BUSINESS = ("business-2", "business")


def rate(api: Api, job: dict[str, Any], stars: Any, who: tuple[str, str] = BUSINESS) -> Any:
    return api.call("POST", f"/jobs/{job['id']}/rating", who, {"stars": stars})


def test_the_business_rates_completed_work_once(api: Api, conn: db.Connection) -> None:
    done = walk_to(api, "completed", holder=worker("rated"))
    reply = rate(api, done, 5)
    assert (reply.status, reply.body) == (
        201,
        {"job_id": done["id"], "worker_id": "worker-rated", "stars": 5},
    )
    job = api.call("GET", f"/jobs/{done['id']}", BUSINESS).body
    assert (job["rating"], job["version"], job["status"]) == (5, done["version"] + 1, "completed")
    last = api.call("GET", f"/jobs/{done['id']}/events", BUSINESS).body["events"][-1]
    assert (last["type"], last["actor"], last["data"]) == ("job.rated", BUSINESS[0], job)
    profile = api.call("PUT", "/workers/me", worker("rated"), {"skills": ["wash"]}).body
    assert profile["rating"] == 4.17  # (5 x 4 + 5) / (5 + 1): one rating barely moves it

    again = rate(api, done, 1)
    assert (again.status, again.code) == (409, "ALREADY_RATED")
    retried = rate(api, done, 5)  # the same stars under a new key: a new request, refused too
    assert retried.code == "ALREADY_RATED"


def test_only_the_owner_only_completed_work_only_one_to_five_stars(api: Api) -> None:
    working = walk_to(api, "in_progress", holder=worker("busy"))
    assert rate(api, working, 4).code == "ILLEGAL_TRANSITION"
    done = walk_to(api, "completed", holder=worker("done"))
    assert rate(api, done, 4, OTHER_BUSINESS).code == "NOT_FOUND"
    assert rate(api, done, 4, worker("done")).code == "FORBIDDEN"
    for stars in (0, 6, 4.5, "5", None, True):
        assert rate(api, done, stars).code == "VALIDATION_FAILED", stars
    assert rate(api, done, 1).status == 201


def test_two_ratings_at_once_one_counts(api: Api, conn: db.Connection, database_url: str) -> None:
    """The same job rated from two devices at the same instant, over and over: one rating, one
    event, the worker's count up by one."""
    for n in range(10):
        done = walk_to(api, "completed", holder=worker(f"raced-{n}"))

        def rate_once(stars: int, job_id: UUID = UUID(done["id"])) -> int | str:
            with db.connect(database_url) as own:
                try:
                    with own.transaction():
                        return commands.rate_job(own, job_id, BUSINESS[0], stars).stars
                except DispatchError as refused:
                    return refused.code.value

        outcomes = in_parallel([lambda: rate_once(5), lambda: rate_once(2)])
        assert sorted(map(str, outcomes)) in (["2", "ALREADY_RATED"], ["5", "ALREADY_RATED"])
        worker_row = conn.execute(
            "SELECT ratings FROM workers WHERE id = %s", (f"worker-raced-{n}",)
        ).fetchone()
        assert worker_row == {"ratings": 1}
        rated = conn.execute(
            "SELECT count(*) AS n FROM job_events WHERE job_id = %s AND type = 'job.rated'",
            (done["id"],),
        ).fetchone()
        assert rated == {"n": 1}


def well_rated(conn: db.Connection, worker_id: str) -> None:
    """Ten five-star ratings: (20 + 50) / 15 = 4.67."""
    conn.execute("UPDATE workers SET ratings = 10, stars = 50 WHERE id = %s", (worker_id,))


def test_a_minimum_rating_holds_for_accept_nearby_and_offers(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    picky = api.call("POST", "/jobs", BUSINESS, {**job_body(), "min_rating": 4.5})
    assert (picky.status, picky.body["min_rating"]) == (201, 4.5)
    picky = picky.body
    place(conn, "newcomer", 300)
    place(conn, "veteran", 600)
    well_rated(conn, "veteran")

    refused = api.call("POST", f"/jobs/{picky['id']}/accept", ("newcomer", "worker"), {})
    assert (refused.status, refused.code) == (403, "RATING_TOO_LOW")
    near = "/jobs/nearby?lat=12.9716&lng=77.5946"
    assert api.call("GET", near, ("newcomer", "worker")).body["jobs"] == []
    assert [j["id"] for j in api.call("GET", near, ("veteran", "worker")).body["jobs"]] == [
        picky["id"]
    ]
    created = conn.execute(
        "SELECT dispatch_event(e) AS document FROM job_events e WHERE job_id = %s",
        (picky["id"],),
    ).fetchone()
    assert created is not None
    waves.run(conn, first_wave(Event.from_document(created["document"])))
    assert waves.offered() == ["veteran"]  # the newcomer is nearer, but below the minimum
    assert waves.put[0].data["job"]["min_rating"] == 4.5
    taken = api.call("POST", f"/jobs/{picky['id']}/accept", ("veteran", "worker"), {})
    assert taken.status == 200


def test_a_minimum_rating_is_one_to_five_with_two_decimals(api: Api) -> None:
    for bad in (0.5, 5.01, 4.555, "4.5", True):
        reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), "min_rating": bad})
        assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), bad
    for good in (1, 4.25, 5.0, None):
        reply = api.call("POST", "/jobs", BUSINESS, {**job_body(), "min_rating": good})
        assert reply.status == 201 and reply.body["min_rating"] == good, good


def test_a_better_rated_worker_is_offered_first_among_equals(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    """Ratings given through the API rank the next offers (within the 100 m tie band)."""
    for name, stars in (("first", 1), ("second", 5)):
        done = walk_to(api, "completed", holder=worker(name))
        assert rate(api, done, stars).status == 201
    for worker_id, metres in (("worker-first", 500), ("worker-second", 540)):
        lat, lng = destination(*HERE, 0, metres)
        locations.report(worker_id, WorkerPosition(lat=lat, lng=lng))
    job = make_job(api)
    waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
    assert waves.offered() == ["worker-second", "worker-first"]
