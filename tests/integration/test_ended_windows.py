"""Jobs outlive their windows: once `window.end` has passed (for real, the clock runs), every
read, list, command and idempotent replay still answers as the contract says, never a 5xx;
nobody can take the job any more, nearby and offers skip it, and the sweeper expires it.

A lease never outlives the window: it is cut at the window's end, check-in and start answer
409 `JOB_UNAVAILABLE` once the window ended, and the sweeper expires a job still assigned then
(one `job.expired`, no `job.reopened`). Work in progress is never cut off.

Found from outside: the stored window was rebuilt through the input model, whose rule "the
end must lie in the future" then failed every read of a job whose window had ended. Then: a
job assigned inside its window could be checked in after it ended, again and again, and when
that lease ran out the sweeper moved it from assigned to expired.
"""

import time
from datetime import datetime
from typing import Any

from dispatch.db import Connection
from dispatch.offers.models import WaveRequest
from tests.integration.conftest import Waves
from tests.integration.test_offers import place
from tests.support import (
    BUSINESS,
    OPS,
    Api,
    Reply,
    attach,
    end_window,
    job_body,
    make_job,
    make_worker,
    step,
    sweep_now,
    walk_to,
    window_ending_in,
    worker,
)

ENDS_IN_SECONDS = 8  # long enough to set every job up before the windows end


def wait_until_ended(when: dict[str, str]) -> None:
    end = datetime.fromisoformat(when["end"]).timestamp()
    time.sleep(max(0.0, end - time.time()) + 0.2)


def answered(reply: Reply) -> bool:
    """A contract answer: not a 5xx, and a JSON body (a resource or the error body)."""
    return reply.status < 500 and isinstance(reply.body, dict)


def test_a_job_whose_window_ended_reads_lists_moves_and_replays(api: Api) -> None:
    when = window_ending_in(ENDS_IN_SECONDS)
    holders = {status: worker(f"ended-{status}") for status in ("assigned", "in_progress")}
    jobs: dict[str, dict[str, Any]] = {
        status: walk_to(
            api, status, holder=holders.get(status, worker(f"ended-{status}")), when=when
        )
        for status in ("open", "assigned", "in_progress", "completed", "cancelled")
    }
    created_key, created_body = "create-before-the-end", {**job_body(), "window": when}
    first = api.call("POST", "/jobs", BUSINESS, created_body, key=created_key)
    assert first.status == 201, first.body
    check_in_key = "check-in-before-the-end"
    held = jobs["assigned"]
    # The lease (DISPATCH_LEASE_SECONDS, ten minutes) is cut at the window's end, seconds away.
    assert held["lease_expires_at"] == when["end"]
    checked_in = api.call(
        "POST",
        f"/jobs/{held['id']}/transitions",
        holders["assigned"],
        {"event": "check_in", "version": held["version"]},
        key=check_in_key,
    )
    assert checked_in.status == 200, checked_in.body
    jobs["assigned"] = checked_in.body
    assert checked_in.body["lease_expires_at"] == when["end"]
    wait_until_ended(when)

    for status, job in jobs.items():
        read = api.call("GET", f"/jobs/{job['id']}", OPS)
        assert read.status == 200, (status, read.body)
        assert read.body["status"] == status and read.body["window"] == when
        history = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS)
        assert history.status == 200, (status, history.body)
        versions = [event["version"] for event in history.body["events"]]
        assert versions == list(range(1, job["version"] + 1))
        assert history.body["events"][-1]["data"] == read.body

    searcher = worker("ended-searcher")
    make_worker(api, searcher)
    nearby = api.call("GET", "/jobs/nearby?lat=12.9716&lng=77.5946&radius_m=1000", searcher)
    assert answered(nearby) and nearby.status == 200, nearby.body
    assert jobs["open"]["id"] not in {j["id"] for j in nearby.body["jobs"]}

    late = api.call("POST", f"/jobs/{jobs['open']['id']}/accept", searcher, {})
    assert (late.status, late.code) == (409, "JOB_UNAVAILABLE")  # before any sweeper ran

    # Work in progress goes on; an assignment that did not start is over: nothing to renew,
    # too late to start (its before photo is there), before any sweeper ran.
    done = step(api, jobs["in_progress"], holders["in_progress"], "complete")
    assert done["status"] == "completed" and done["window"] == when
    for event in ("check_in", "start"):
        late_move = api.call(
            "POST",
            f"/jobs/{held['id']}/transitions",
            holders["assigned"],
            {"event": event, "version": jobs["assigned"]["version"]},
        )
        assert (late_move.status, late_move.code) == (409, "JOB_UNAVAILABLE"), late_move.body
    # The sweeper ends it: expired, one job.expired, never reopened for a market that cannot
    # take it; its holder is fenced off by the version.
    assert sweep_now()["reopened"] == 0
    history = api.call("GET", f"/jobs/{held['id']}/events", BUSINESS).body["events"]
    assert [e["type"] for e in history[-2:]] == ["job.checked_in", "job.expired"]
    assert history[-1]["data"]["status"] == "expired"
    assert history[-1]["data"]["assignee_id"] is None
    assert history[-2]["data"]["assignee_id"] == holders["assigned"][0]
    fenced = api.call(
        "POST",
        f"/jobs/{held['id']}/transitions",
        holders["assigned"],
        {"event": "check_in", "version": jobs["assigned"]["version"]},
    )
    assert (fenced.status, fenced.code) == (409, "VERSION_CONFLICT")

    # Retries of requests made before the end replay exactly, though their body would no
    # longer pass validation today (the window has ended).
    replay = api.call("POST", "/jobs", BUSINESS, created_body, key=created_key)
    assert (replay.status, replay.body) == (201, first.body)
    assert replay.headers.get("Idempotent-Replayed") == "true"
    replayed_check_in = api.call(
        "POST",
        f"/jobs/{held['id']}/transitions",
        holders["assigned"],
        {"event": "check_in", "version": held["version"]},
        key=check_in_key,
    )
    assert (replayed_check_in.status, replayed_check_in.body) == (200, checked_in.body)
    assert replayed_check_in.headers.get("Idempotent-Replayed") == "true"
    # A new request with that body is refused: the window must end in the future.
    fresh = api.call("POST", "/jobs", BUSINESS, created_body)
    assert (fresh.status, fresh.code) == (400, "VALIDATION_FAILED")


def test_the_sweeper_expires_every_job_not_started_when_its_window_ends(
    api: Api, conn: Connection
) -> None:
    """Open jobs whose window ended expire, and so do assigned ones: their lease ended with the
    window at the latest (held by someone still checking in or gone silent alike). A job in
    progress stays with its holder, who completes it, late; a job whose window lasts is left."""
    open_job = make_job(api)
    present, quitter = worker("checking-in"), worker("gone-silent")
    held = walk_to(api, "assigned", holder=present)
    abandoned = walk_to(api, "assigned", holder=quitter)
    working_holder = worker("at-work")
    working = walk_to(api, "in_progress", holder=working_holder)
    future = make_job(api)
    for job in (open_job, held, abandoned, working):
        end_window(job["id"])

    swept = sweep_now()
    assert (swept["expired_jobs"], swept["reopened"]) == (3, 0)
    status = {row["id"]: row["status"] for row in conn.execute("SELECT id::text, status FROM jobs")}
    assert status[open_job["id"]] == status[held["id"]] == status[abandoned["id"]] == "expired"
    assert (status[working["id"]], status[future["id"]]) == ("in_progress", "open")
    for job in (held, abandoned):
        events = api.call("GET", f"/jobs/{job['id']}/events", BUSINESS).body["events"]
        assert (events[-1]["type"], events[-1]["actor"]) == ("job.expired", "system:lease-sweeper")
        assert events[-1]["data"]["assignee_id"] is None
        assert "job.reopened" not in {e["type"] for e in events}

    # Each holder is fenced off, and nobody can take the job.
    silent = api.call(
        "POST",
        f"/jobs/{abandoned['id']}/transitions",
        quitter,
        {"event": "check_in", "version": abandoned["version"]},
    )
    assert (silent.status, silent.code) == (409, "VERSION_CONFLICT")
    taker = worker("eager")
    make_worker(api, taker)
    assert api.call("POST", f"/jobs/{held['id']}/accept", taker, {}).code == "JOB_UNAVAILABLE"
    # The work in progress finishes, late.
    finished = attach(api, working, working_holder, "after")
    assert step(api, finished, working_holder, "complete")["status"] == "completed"
    assert sweep_now()["expired_jobs"] == 0  # nothing twice


def test_a_wave_for_a_job_whose_window_ended_offers_nobody(
    api: Api, conn: Connection, waves: Waves
) -> None:
    place(conn, "would-take-it", 300)
    job = make_job(api)
    end_window(job["id"])
    report = waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
    assert (report.offered, report.scheduled) == (0, False)
