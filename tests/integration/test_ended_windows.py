"""Jobs outlive their windows: once `window.end` has passed (for real, the clock runs), every
read, list, command and idempotent replay still answers as the contract says, never a 5xx.

Found from outside: the stored window was rebuilt through the input model, whose rule "the
end must lie in the future" then failed every read of a job whose window had ended.
"""

import time
from datetime import datetime
from typing import Any

from tests.support import (
    BUSINESS,
    OPS,
    Api,
    Reply,
    attach,
    job_body,
    make_worker,
    step,
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

    late = api.call("POST", f"/jobs/{jobs['open']['id']}/accept", searcher, {})
    assert answered(late), late.body

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
