"""The business's deadline to choose: the sweeper's auto-pick (the best applicant who can be
assigned now), or job.unfilled with a reason; raced against the business's own assign."""

import uuid
from typing import Any
from uuid import UUID

import pytest

from dispatch import db, idempotency
from dispatch.choice import commands as choice
from dispatch.choice import deadline
from dispatch.errors import DispatchError
from dispatch.offers.models import WaveRequest
from tests.integration.conftest import Waves
from tests.integration.test_accept_races import together
from tests.integration.test_business_choice import apply, assign, choice_job, setup_choice
from tests.support import (
    BUSINESS,
    Api,
    consumer_of,
    drain,
    job_body,
    make_worker,
    on_the_bus,
    step,
    sweep_now,
    worker,
)


def deadline_passes(conn: db.Connection, job: dict[str, Any]) -> None:
    """The business's time to choose runs out (the clock, not the job)."""
    conn.execute("UPDATE jobs SET choose_by = now() - interval '1 s' WHERE id = %s", (job["id"],))


def unfilled(conn: db.Connection, job: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        r["data"]
        for r in conn.execute(
            "SELECT data FROM offer_events WHERE job_id = %s AND type = 'job.unfilled'",
            (job["id"],),
        )
    ]


def rate(conn: db.Connection, worker_id: str, ratings: int, stars: int) -> None:
    conn.execute(
        "UPDATE workers SET ratings = %s, stars = %s WHERE id = %s", (ratings, stars, worker_id)
    )


def test_the_auto_pick_assigns_the_best_applicant_who_is_free(
    api: Api, conn: db.Connection
) -> None:
    job = choice_job(api, auto_pick=True, choose_within_s=600)
    for n in (1, 2, 3, 4):
        make_worker(api, worker(n))
        apply(api, job, worker(n))
    rate(conn, "worker-2", 10, 50)  # 4.67: the best
    rate(conn, "worker-3", 10, 45)  # 4.33: next
    rate(conn, "worker-4", 10, 20)  # 2.67; worker-1 unrated counts as 4.0
    other = api.call("POST", "/jobs", BUSINESS, job_body()).body
    api.call("POST", f"/jobs/{other['id']}/accept", worker(2), {})  # the best is busy
    sweep_now()
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["status"] == "open"  # not yet
    deadline_passes(conn, job)
    done = sweep_now()
    assert done["auto_picked"] == 1
    picked = api.call("GET", f"/jobs/{job['id']}", BUSINESS).body
    assert (picked["status"], picked["assignee_id"]) == ("assigned", "worker-3")
    events = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS).body["events"]
    assert (events[-1]["type"], events[-1]["actor"]) == ("job.assigned", "system:auto-pick")
    assert unfilled(conn, job) == []


def test_among_equals_the_more_reliable_then_the_earlier_applicant_is_picked(
    api: Api, conn: db.Connection
) -> None:
    job = choice_job(api, auto_pick=True, choose_within_s=600)
    for n in (1, 2, 3):
        make_worker(api, worker(n))
    released = api.call("POST", "/jobs", BUSINESS, job_body()).body
    held = api.call("POST", f"/jobs/{released['id']}/accept", worker(1), {}).body
    api.call(
        "POST",
        f"/jobs/{released['id']}/transitions",
        worker(1),
        {"event": "release", "version": held["version"]},
    )
    for n in (1, 2, 3):
        apply(api, job, worker(n))
    deadline_passes(conn, job)
    sweep_now()
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["assignee_id"] == "worker-2"


def test_without_auto_pick_the_business_hears_it_is_unfilled_once(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    job = choice_job(api, choose_within_s=600)
    for n in (1, 2):
        make_worker(api, worker(n))
        apply(api, job, worker(n))
    deadline_passes(conn, job)
    assert sweep_now()["unfilled_choices"] == 1
    assert sweep_now()["unfilled_choices"] == 0  # once per round
    drain(queues["outbox"])  # relayed after it committed: the publisher puts it on the bus
    assert unfilled(conn, job) == [
        {"waves": 0, "offered": 0, "reason": "not_chosen", "applicants": 2}
    ]
    actor = conn.execute(
        "SELECT actor, published_at IS NOT NULL AS on_the_bus FROM offer_events"
        " WHERE type = 'job.unfilled'"
    ).fetchone()
    assert actor == {"actor": "system:choice-deadline", "on_the_bus": True}
    # Still open: the business may choose late, workers may still apply.
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["status"] == "open"
    assert assign(api, job, BUSINESS, "worker-1").status == 200


@pytest.mark.parametrize("auto_pick", [True, False])
def test_no_applicants_by_the_deadline_is_unfilled_either_way(
    api: Api, conn: db.Connection, auto_pick: bool
) -> None:
    job = choice_job(api, auto_pick=auto_pick, choose_within_s=600)
    deadline_passes(conn, job)
    sweep_now()
    assert unfilled(conn, job) == [
        {"waves": 0, "offered": 0, "reason": "no_applicants", "applicants": 0}
    ]
    if auto_pick:  # someone applies late: the next pass picks them
        make_worker(api, worker(1))
        apply(api, job, worker(1))
        sweep_now()
        assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["assignee_id"] == "worker-1"


def test_the_unfilled_event_is_on_the_bus(
    api: Api, conn: db.Connection, queues: dict[str, str]
) -> None:
    job = choice_job(api, choose_within_s=600)
    deadline_passes(conn, job)
    sweep_now()
    drain(queues["outbox"])
    types = [(e["detail-type"], e["detail"]["job_id"]) for e in on_the_bus(queues["tap"])]
    assert ("job.unfilled", job["id"]) in types


def test_applications_and_a_return_to_choice_reach_the_bus(
    api: Api, queues: dict[str, str], cache: Any
) -> None:
    """What the business hears over push comes from the bus: every application event and the
    return to its choice get there, as its changes do."""
    job = choice_job(api)
    for n in (1, 2):
        make_worker(api, worker(n))
        apply(api, job, worker(n))
    assert api.call("DELETE", f"/jobs/{job['id']}/applications/me", worker(2)).status == 204
    held = assign(api, job, BUSINESS, "worker-1").body
    step(api, held, worker(1), "release")
    # The changes go through the outbox queue's publisher; the return to choice (the trigger's,
    # in the release's transaction) with the new round's first wave, which the release starts.
    drain(queues["outbox"])
    drain(queues["offers"], consumer_of("OfferQueue"))
    on_bus = {(e["detail-type"], e["detail"]["job_id"]) for e in on_the_bus(queues["tap"])}
    for kind in (
        "application.created",
        "application.withdrawn",
        "job.assigned",
        "job.released",
        "job.back_to_choice",
    ):
        assert (kind, job["id"]) in on_bus, kind


def test_the_offer_waves_never_call_a_choice_job_unfilled(
    api: Api, conn: db.Connection, waves: Waves
) -> None:
    job = choice_job(api)
    first_come = api.call("POST", "/jobs", BUSINESS, job_body()).body
    for each in (job, first_come):
        report = waves.run(conn, WaveRequest(job_id=each["id"], version=1, wave=99))
        assert report.unfilled is (each is first_come)
    assert unfilled(conn, job) == []


def test_the_sweeper_and_the_business_choose_at_once_one_winner(
    conn: db.Connection, database_url: str
) -> None:
    winners: set[str] = set()
    for _ in range(20):
        job_id = setup_choice(conn, ["w-1", "w-2"])
        conn.execute("UPDATE jobs SET choose_by = now() - interval '1 s'")

        def business(c: db.Connection, job_id: UUID = job_id) -> Any:
            request = idempotency.KeyedRequest("business-1", str(uuid.uuid4()), "fp", "r")
            answer = idempotency.execute(
                c,
                request,
                lambda x, key: choice.assign(x, job_id, "business-1", "w-2", 1, key=key),
                200,
            )
            return answer.status if answer.status == 200 else answer.body

        def sweeper(c: db.Connection) -> Any:
            try:
                return deadline.pass_deadlines(c, 100).picked
            except DispatchError as error:  # never: the pick's refusals are its own business
                return error

        answer, picked = together([business, sweeper], database_url)
        assert (answer == 200) != (picked == 1), (answer, picked)
        if answer != 200:
            assert "JOB_ALREADY_ASSIGNED" in answer
        events = conn.execute("SELECT actor FROM job_events WHERE type = 'job.assigned'").fetchall()
        assert len(events) == 1
        winners.add(events[0]["actor"])
    assert winners <= {"business-1", "system:auto-pick"}


# -- back to the business's choice -------------------------------------------------------------


def back_to_choice(conn: db.Connection, job: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {**r["data"], "actor": r["actor"], "version": r["version"]}
        for r in conn.execute(
            "SELECT data, actor, version FROM offer_events"
            " WHERE job_id = %s AND type = 'job.back_to_choice' ORDER BY occurred_at",
            (job["id"],),
        )
    ]


def test_a_release_goes_back_to_the_business_with_the_other_applicants(
    api: Api, conn: db.Connection
) -> None:
    job = choice_job(api, choose_within_s=600)
    for n in (1, 2, 3):
        make_worker(api, worker(n))
        apply(api, job, worker(n))
    held = assign(api, job, BUSINESS, "worker-1").body
    conn.execute("UPDATE jobs SET choose_by = now() - interval '1 s'")  # chosen late
    released = api.call(
        "POST",
        f"/jobs/{job['id']}/transitions",
        worker(1),
        {"event": "release", "version": held["version"]},
    ).body
    assert (released["status"], released["assignee_id"]) == ("open", None)
    (event,) = back_to_choice(conn, job)
    assert (event["worker_id"], event["reason"], event["applicants"]) == ("worker-1", "released", 2)
    assert event["version"] == released["version"] and event["actor"] == "system"
    listed = api.call("GET", f"/jobs/{job['id']}/applications", BUSINESS).body["applications"]
    assert [a["worker_id"] for a in listed] == ["worker-2", "worker-3"]
    # Without auto_pick the business gets its full time again.
    fresh = conn.execute(
        "SELECT choose_by > now() + interval '590 s' AS renewed FROM jobs"
    ).fetchone()
    assert fresh == {"renewed": True}
    refused = assign(api, released, BUSINESS, "worker-1")
    assert (refused.status, refused.code) == (409, "NOT_AN_APPLICANT")
    assert assign(api, released, BUSINESS, "worker-2").status == 200


def test_a_vanished_choice_goes_to_the_next_applicant_with_auto_pick(
    api: Api, conn: db.Connection
) -> None:
    job = choice_job(api, auto_pick=True, choose_within_s=600)
    for n in (1, 2):
        make_worker(api, worker(n))
        apply(api, job, worker(n))
    rate(conn, "worker-1", 10, 50)
    deadline_passes(conn, job)
    sweep_now()
    assert api.call("GET", f"/jobs/{job['id']}", BUSINESS).body["assignee_id"] == "worker-1"
    conn.execute("UPDATE jobs SET lease_expires_at = now() - interval '1 s'")  # worker-1 vanishes
    done = sweep_now()
    assert (done["reopened"], done["auto_picked"]) == (1, 1)  # in the same pass
    now = api.call("GET", f"/jobs/{job['id']}", BUSINESS).body
    assert (now["status"], now["assignee_id"]) == ("assigned", "worker-2")
    (event,) = back_to_choice(conn, job)
    assert (event["worker_id"], event["reason"], event["applicants"]) == ("worker-1", "vanished", 1)
    # The business pulls what push told it: the return to its choice among the changes.
    history = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS).body["events"]
    assert [(e["type"], e["actor"]) for e in history][-4:] == [
        ("job.assigned", "system:auto-pick"),
        ("job.reopened", "system:lease-sweeper"),
        ("job.back_to_choice", "system"),
        ("job.assigned", "system:auto-pick"),
    ]


def test_the_database_sends_a_choice_back_whoever_reopens_it(
    api: Api, app_conn: db.Connection, conn: db.Connection
) -> None:
    job = choice_job(api)
    make_worker(api, worker(1))
    apply(api, job, worker(1))
    assign(api, job, BUSINESS, "worker-1")
    app_conn.execute(
        """UPDATE jobs SET status = 'open', assignee_id = NULL, lease_expires_at = NULL,
                           version = version + 1 WHERE id = %s""",
        (job["id"],),
    )
    (event,) = back_to_choice(conn, job)
    assert (event["reason"], event["applicants"], event["choose_by"]) == ("released", 0, None)
    ended = conn.execute("SELECT withdrawn_at IS NOT NULL AS ended FROM job_applications")
    assert ended.fetchall() == [{"ended": True}]


def test_first_come_reopens_as_before(api: Api, conn: db.Connection) -> None:
    make_worker(api, worker(1))
    job = api.call("POST", "/jobs", BUSINESS, job_body()).body
    held = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).body
    api.call(
        "POST",
        f"/jobs/{job['id']}/transitions",
        worker(1),
        {"event": "release", "version": held["version"]},
    )
    assert back_to_choice(conn, job) == []
