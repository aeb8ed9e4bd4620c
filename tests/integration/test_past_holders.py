"""A worker whose hold ended while it was away learns it by pulling (docs/api.md, "Past
holders"): it reads the job as the end of its hold left it and the events up to that end, and
nothing of whoever holds the job after it."""

from typing import Any

import pytest

from dispatch import db
from dispatch.sweeper import sweep
from tests.integration.test_leases import expire
from tests.support import BUSINESS, Api, Who, make_worker, step, walk_to, worker

AWAY = worker("away")
NEXT = worker("next")


def reads(api: Api, who: Who, job_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    job = api.call("GET", f"/jobs/{job_id}", who)
    events = api.call("GET", f"/jobs/{job_id}/events", who)
    assert (job.status, events.status) == (200, 200), (job.body, events.body)
    return job.body, events.body["events"]


@pytest.mark.parametrize("end", ["cancel", "release", "lease-ran-out"])
def test_a_past_holder_reads_the_end_of_its_hold(api: Api, conn: db.Connection, end: str) -> None:
    held = walk_to(api, "assigned", holder=AWAY)
    if end == "cancel":
        step(api, held, BUSINESS, "cancel")
    elif end == "release":
        step(api, held, AWAY, "release")
    else:
        expire(conn, held["id"])
        assert sweep(conn).reopened == 1
    job, events = reads(api, AWAY, held["id"])
    last = events[-1]
    assert (
        last["type"]
        == {
            "cancel": "job.cancelled",
            "release": "job.released",
            "lease-ran-out": "job.reopened",
        }[end]
    )
    assert (last["version"], job["version"]) == (held["version"] + 1, held["version"] + 1)
    assert job["assignee_id"] is None
    assert job == last["data"]  # the job as the end of its hold left it
    assert [e["version"] for e in events] == list(range(1, held["version"] + 2))


def test_a_past_holder_reads_nothing_of_the_next_holder(api: Api, conn: db.Connection) -> None:
    held = walk_to(api, "assigned", holder=AWAY)
    step(api, held, AWAY, "release")
    make_worker(api, NEXT)
    taken = api.call("POST", f"/jobs/{held['id']}/accept", NEXT, {})
    assert taken.status == 200, taken.body
    step(api, taken.body, NEXT, "check_in")
    job, events = reads(api, AWAY, held["id"])
    assert (job["status"], job["version"]) == ("open", held["version"] + 1)
    assert all(NEXT[0] not in str(event) for event in events)
    assert len(reads(api, NEXT, held["id"])[1]) == held["version"] + 3  # the holder reads all


def test_a_lapsed_lease_taken_over_ends_the_view_at_its_own_last_event(
    api: Api, conn: db.Connection
) -> None:
    held = walk_to(api, "assigned", holder=AWAY)
    expire(conn, held["id"])
    make_worker(api, NEXT)
    taken = api.call("POST", f"/jobs/{held['id']}/accept", NEXT, {})
    assert (taken.status, taken.body["assignee_id"]) == (200, NEXT[0]), taken.body
    job, events = reads(api, AWAY, held["id"])
    # The takeover names the next holder: the past holder's view ends before it, at a job
    # still its own whose lease has run out.
    assert (job["version"], job["assignee_id"]) == (held["version"], AWAY[0])
    assert events[-1]["version"] == held["version"]
    assert all(NEXT[0] not in str(event) for event in events)


def test_held_again_reads_everything_and_a_stranger_reads_nothing(api: Api) -> None:
    held = walk_to(api, "assigned", holder=AWAY)
    step(api, held, AWAY, "release")
    again = api.call("POST", f"/jobs/{held['id']}/accept", AWAY, {})
    assert again.status == 200, again.body
    job, events = reads(api, AWAY, held["id"])
    assert (job["version"], len(events)) == (held["version"] + 2, held["version"] + 2)
    for path in (f"/jobs/{held['id']}", f"/jobs/{held['id']}/events"):
        stranger = api.call("GET", path, worker("never-held-it"))
        assert (stranger.status, stranger.code) == (404, "NOT_FOUND")


def test_a_past_holder_reads_but_cannot_move_the_job(api: Api) -> None:
    held = walk_to(api, "assigned", holder=AWAY)
    step(api, held, AWAY, "release")
    moved = api.call(
        "POST",
        f"/jobs/{held['id']}/transitions",
        AWAY,
        {"event": "check_in", "version": held["version"] + 1},
    )
    assert moved.status in (403, 409), moved.body
