"""Every (status, event, actor) against the state machine table, through the handler."""

from typing import Any

import pytest

from dispatch.db import Connection
from dispatch.jobs.lifecycle import MACHINE, Actor
from dispatch.jobs.models import JobStatus, TransitionEvent
from tests.support import BUSINESS, OPS, Api, Who, make_worker, walk_to, worker

HOLDER = worker("holder")
STRANGER = worker("stranger")
OTHER_BUSINESS: Who = ("business-2", "business")
CALLERS = {"holder": HOLDER, "stranger": STRANGER, "owner": BUSINESS, "other": OTHER_BUSINESS}
HELD = {JobStatus.ASSIGNED, JobStatus.IN_PROGRESS, JobStatus.COMPLETED}


def expected(status: JobStatus, event: TransitionEvent, caller: str) -> int | str:
    """What the contract says, derived from the one table in the domain."""
    move = MACHINE[event]
    role = "worker" if caller in ("holder", "stranger") else "business"
    if role != move.actor.role.value:
        return "FORBIDDEN"
    is_actor = (
        (caller == "holder" and status in HELD)
        if move.actor is Actor.ASSIGNEE
        else (caller == "owner")
    )
    if not is_actor:
        return "NOT_FOUND"
    if status not in move.sources:
        return "ILLEGAL_TRANSITION"
    return 200


@pytest.mark.parametrize("status", list(JobStatus))
@pytest.mark.parametrize("event", list(TransitionEvent))
@pytest.mark.parametrize("caller", list(CALLERS))
def test_every_status_event_and_actor(
    api: Api, conn: Connection, status: JobStatus, event: TransitionEvent, caller: str
) -> None:
    job = walk_to(api, status.value, holder=HOLDER)
    make_worker(api, STRANGER)
    reply = api.call(
        "POST",
        f"/jobs/{job['id']}/transitions",
        CALLERS[caller],
        {"event": event.value, "version": job["version"]},
    )
    want = expected(status, event, caller)
    after = conn.execute("SELECT status, version FROM jobs WHERE id = %s", (job["id"],)).fetchone()
    assert after is not None
    if want == 200:
        assert reply.status == 200, reply.body
        assert reply.body["status"] == MACHINE[event].target.value
        assert reply.body["version"] == job["version"] + 1
        assert after == {"status": MACHINE[event].target.value, "version": job["version"] + 1}
        last = conn.execute(
            "SELECT type, actor FROM job_events WHERE job_id = %s ORDER BY version DESC LIMIT 1",
            (job["id"],),
        ).fetchone()
        assert last == {"type": MACHINE[event].event_type, "actor": CALLERS[caller][0]}
    else:
        assert reply.code == want, reply.body
        assert after == {"status": status.value, "version": job["version"]}  # nothing changed


def test_ops_may_read_but_not_drive(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", OPS, {"event": "cancel", "version": 2}
    )
    assert (reply.status, reply.code) == (403, "FORBIDDEN")


def test_what_each_move_does_to_assignee_lease_and_photos(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    assert job["lease_expires_at"] is not None
    assert job["before_photo_id"] is not None
    checked_in = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "check_in", "version": 3}
    ).body
    assert checked_in["lease_expires_at"] > job["lease_expires_at"]
    released = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "release", "version": 4}
    ).body
    assert (released["status"], released["assignee_id"]) == ("open", None)
    assert released["lease_expires_at"] is None
    assert released["before_photo_id"] is None  # evidence belongs to the assignment
    started = walk_to(api, "in_progress", holder=worker("w-2"))
    assert started["lease_expires_at"] is None  # start ends the lease


@pytest.mark.parametrize("version", [1, 99])
def test_the_version_is_the_fencing_token(api: Api, version: int) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "check_in", "version": version}
    )
    assert (reply.status, reply.code) == (409, "VERSION_CONFLICT")


def test_double_tapped_start_is_a_409_not_a_500(api: Api) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    body = {"event": "start", "version": job["version"]}
    first = api.call("POST", f"/jobs/{job['id']}/transitions", HOLDER, body)
    second = api.call("POST", f"/jobs/{job['id']}/transitions", HOLDER, body)
    assert first.status == 200
    assert (second.status, second.code) == (409, "VERSION_CONFLICT")


def test_start_needs_the_before_photo_and_complete_the_after(api: Api) -> None:
    from tests.support import attach, make_job, step

    make_worker(api, HOLDER)
    job = make_job(api)
    job = api.call("POST", f"/jobs/{job['id']}/accept", HOLDER, {}).body
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "start", "version": 2}
    )
    assert (reply.status, reply.code) == (409, "BEFORE_PHOTO_REQUIRED")
    job = step(api, attach(api, job, HOLDER, "before"), HOLDER, "start")
    reply = api.call(
        "POST", f"/jobs/{job['id']}/transitions", HOLDER, {"event": "complete", "version": 4}
    )
    assert (reply.status, reply.code) == (409, "AFTER_PHOTO_REQUIRED")


@pytest.mark.parametrize(
    "body",
    [
        {"event": "teleport", "version": 1},
        {"event": "start"},
        {"event": "start", "version": "1"},
        {"event": "start", "version": 0},
        {"version": 1},
        {"event": "start", "version": 1, "extra": 1},
    ],
)
def test_bad_transition_bodies(api: Api, body: dict[str, Any]) -> None:
    job = walk_to(api, "assigned", holder=HOLDER)
    reply = api.call("POST", f"/jobs/{job['id']}/transitions", HOLDER, body)
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED")
