"""A job's whole life over real HTTP, photos uploaded for real, and a lease that runs out."""

import time
from typing import Any

import requests

from dispatch.db import Connection
from dispatch_local import photos
from tests.e2e.client import Client
from tests.support import job_body

POLL_SECONDS = 0.2


def upload(worker: Client, content: bytes = b"\xff\xd8jpeg") -> str:
    slot = worker.send("POST", "/photos", {"content_type": "image/jpeg"})
    assert slot.status_code == 201, slot.text
    sent = photos.upload(slot.json(), content)
    assert sent.status_code in (200, 204), sent.text
    photo_id: str = slot.json()["photo_id"]
    return photo_id


def move(who: Client, job: dict[str, Any], event: str) -> requests.Response:
    return who.send(
        "POST", f"/jobs/{job['id']}/transitions", {"event": event, "version": job["version"]}
    )


def test_open_assigned_in_progress_completed(stack: str, conn: Connection) -> None:
    business = Client(stack, "biz-life", "business")
    washer = Client(stack, "washer-life", "worker")
    assert washer.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    job = business.send("POST", "/jobs", job_body(["wash"])).json()
    job = washer.send("POST", f"/jobs/{job['id']}/accept", {}).json()
    assert job["status"] == "assigned"

    no_photo = move(washer, job, "start")
    assert (no_photo.status_code, no_photo.json()["error"]["code"]) == (
        409,
        "BEFORE_PHOTO_REQUIRED",
    )
    early = washer.send("PUT", f"/jobs/{job['id']}/photos/after", {"photo_id": upload(washer)})
    assert early.json()["error"]["code"] == "PHOTO_SLOT_CLOSED"

    before = upload(washer)
    job = washer.send("PUT", f"/jobs/{job['id']}/photos/before", {"photo_id": before}).json()
    job = move(washer, job, "check_in").json()
    started = move(washer, job, "start")
    assert started.status_code == 200
    job = started.json()
    assert (job["status"], job["lease_expires_at"]) == ("in_progress", None)

    no_after = move(washer, job, "complete")
    assert no_after.json()["error"]["code"] == "AFTER_PHOTO_REQUIRED"
    frozen = washer.send("PUT", f"/jobs/{job['id']}/photos/before", {"photo_id": upload(washer)})
    assert frozen.json()["error"]["code"] == "PHOTO_SLOT_CLOSED"
    job = washer.send("PUT", f"/jobs/{job['id']}/photos/after", {"photo_id": upload(washer)}).json()
    done = move(washer, job, "complete")
    assert done.status_code == 200
    assert done.json()["status"] == "completed"

    cancel = move(business, done.json(), "cancel")
    assert cancel.json()["error"]["code"] == "ILLEGAL_TRANSITION"
    events = business.send("GET", f"/jobs/{job['id']}/events").json()["events"]
    # Besides its changes the business pulls what push told it (an offer to the washer, when
    # a wave went out before the accept): offer events, never changes of their own.
    assert {e["type"] for e in events if not e["type"].startswith("job.")} <= {"offer.created"}
    assert [e["type"] for e in events if e["type"] != "offer.created"] == [
        "job.created",
        "job.assigned",
        "job.photo_attached",
        "job.checked_in",
        "job.started",
        "job.photo_attached",
        "job.completed",
    ]
    assert [e["version"] for e in events] == list(range(1, 8))


def test_an_abandoned_job_goes_back_to_the_market(short_lease_stack: str, conn: Connection) -> None:
    business = Client(short_lease_stack, "biz-lease", "business")
    silent = Client(short_lease_stack, "silent-worker", "worker")
    eager = Client(short_lease_stack, "eager-worker", "worker")
    for w in (silent, eager):
        assert w.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    job = business.send("POST", "/jobs", job_body(["wash"])).json()
    held = silent.send("POST", f"/jobs/{job['id']}/accept", {}).json()
    assert held["version"] == 2

    deadline = time.monotonic() + 15  # a 3 s lease and a sweep every second
    while True:
        now = business.send("GET", f"/jobs/{job['id']}").json()
        if now["status"] == "open":
            break
        assert time.monotonic() < deadline, now
        time.sleep(POLL_SECONDS)
    assert now["version"] == 3
    assert now["assignee_id"] is None

    stale = move(silent, held, "check_in")
    assert (stale.status_code, stale.json()["error"]["code"]) == (409, "VERSION_CONFLICT")
    taken = eager.send("POST", f"/jobs/{job['id']}/accept", {"version": 3})
    assert taken.status_code == 200
    assert taken.json()["assignee_id"] == "eager-worker"
