"""Jobs outlive their windows: once `window.end` has passed (for real, the clock runs), every
read, list, command and idempotent replay still answers as the contract says, never a 5xx;
nobody can take the job any more, nearby and offers skip it, and the sweeper expires it.

Found from outside: the stored window was rebuilt through the input model, whose rule "the
end must lie in the future" then failed every read of a job whose window had ended.
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
    checked_in = api.call(
        "POST",
        f"/jobs/{held['id']}/transitions",
        holders["assigned"],
        {"event": "check_in", "version": held["version"]},
        key=check_in_key,
    )
    assert checked_in.status == 200, checked_in.body
    jobs["assigned"] = checked_in.body
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

    # The holders go on with the jobs they hold: the window is the business's wish, the
    # lifecycle still works (and every answer carries the ended window).
    checked_in_again = step(api, jobs["assigned"], holders["assigned"], "check_in")
    assert checked_in_again["window"] == when
    done = step(api, jobs["in_progress"], holders["in_progress"], "complete")
    assert done["status"] == "completed"
    before = attach(api, checked_in_again, holders["assigned"], "before")
    assert before["before_photo_id"] is not None

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


def test_the_sweeper_expires_what_nobody_holds_and_leaves_holders_be(
    api: Api, conn: Connection
) -> None:
    """Open jobs whose window ended expire; an assigned job whose lease still runs stays with
    its holder (who may still work it, late); once that lease runs out it expires instead of
    going back to a market that may no longer take it."""
    open_job = make_job(api)
    holder, quitter = worker("late-but-there"), worker("gone-silent")
    held = walk_to(api, "assigned", holder=holder)
    abandoned = walk_to(api, "assigned", holder=quitter)
    future = make_job(api)
    for job in (open_job, held, abandoned):
        end_window(job["id"])
    conn.execute("UPDATE jobs SET lease_expires_at = now() WHERE id = %s", (abandoned["id"],))

    swept = sweep_now()
    assert (swept["expired_jobs"], swept["reopened"]) == (2, 0)
    status = {row["id"]: row["status"] for row in conn.execute("SELECT id::text, status FROM jobs")}
    assert status[open_job["id"]] == status[abandoned["id"]] == "expired"
    assert (status[held["id"]], status[future["id"]]) == ("assigned", "open")
    events = api.call("GET", f"/jobs/{abandoned['id']}/events", BUSINESS).body["events"]
    assert (events[-1]["type"], events[-1]["actor"]) == ("job.expired", "system:lease-sweeper")
    assert events[-1]["data"]["assignee_id"] is None

    # The silent holder is fenced off, and nobody can take the job.
    silent = api.call(
        "POST",
        f"/jobs/{abandoned['id']}/transitions",
        quitter,
        {"event": "check_in", "version": abandoned["version"]},
    )
    assert (silent.status, silent.code) == (409, "VERSION_CONFLICT")
    taker = worker("eager")
    make_worker(api, taker)
    assert api.call("POST", f"/jobs/{abandoned['id']}/accept", taker, {}).code == (
        "JOB_UNAVAILABLE"
    )
    # The holder still present works the job, late: the business may cancel if it must.
    started = step(api, api.call("GET", f"/jobs/{held['id']}", OPS).body, holder, "start")
    assert started["status"] == "in_progress"
    assert sweep_now()["expired_jobs"] == 0  # nothing twice


def test_a_wave_for_a_job_whose_window_ended_offers_nobody(
    api: Api, conn: Connection, waves: Waves
) -> None:
    place(conn, "would-take-it", 300)
    job = make_job(api)
    end_window(job["id"])
    report = waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
    assert (report.offered, report.scheduled) == (0, False)
