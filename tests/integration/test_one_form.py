"""One form for every answer and every event: compact JSON (no space after a colon or a
comma), the keys in the model's field order, text as it is. Whether Postgres wrote the text (a
write's answer, a replay, an event) or Python did (a read, an error), the bytes are those of
`dispatch.models.to_json` over the same values.

Found from outside: writes answered compact JSON, reads spaced JSON, and an event's `data` had
its keys in another order than the Job (jsonb's own order).
"""

import json
from typing import Any

from pydantic import BaseModel

from dispatch.choice.models import Applicants, Application
from dispatch.db import Connection
from dispatch.events import Event
from dispatch.http.openapi import ErrorBody, Health
from dispatch.jobs.models import (
    Job,
    JobEvents,
    JobRating,
    NearbyJobs,
    PhotoUpload,
)
from dispatch.models import to_json
from dispatch.offers.models import Declined, Offers
from dispatch.ops.models import EventPage, OpsJobs, OpsWorkers, Summary
from dispatch.rosters.models import Blocked, Favourites, RosterEntry
from dispatch.workers.models import WorkerProfile
from dispatch_local.events import LambdaContext
from dispatch_local.template import handler_of
from tests.contract import in_model_order, in_the_one_form
from tests.integration.conftest import Waves
from tests.support import (
    BUSINESS,
    OPS,
    Api,
    Who,
    attach,
    drain,
    make_worker,
    on_the_bus,
    step,
    upload_photo,
    worker,
)

# What each route answers on success (the console's page and files are not JSON documents).
ANSWERS: dict[str, type[BaseModel] | None] = {
    "GET /health": Health,
    "POST /jobs": Job,
    "GET /jobs/nearby": NearbyJobs,
    "GET /jobs/{job_id}": Job,
    "GET /jobs/{job_id}/events": JobEvents,
    "POST /jobs/{job_id}/accept": Job,
    "POST /jobs/{job_id}/transitions": Job,
    "POST /photos": PhotoUpload,
    "PUT /jobs/{job_id}/photos/{slot}": Job,
    "PUT /workers/me": WorkerProfile,
    "PUT /workers/me/location": None,  # 204, no body
    "GET /workers/me/offers": Offers,
    "POST /jobs/{job_id}/decline": Declined,
    "POST /jobs/{job_id}/rating": JobRating,
    "GET /ops/jobs": OpsJobs,
    "GET /ops/workers": OpsWorkers,
    "GET /ops/events": EventPage,
    "GET /ops/summary": Summary,
    "POST /jobs/{job_id}/applications": Application,
    "DELETE /jobs/{job_id}/applications/me": None,  # 204, no body
    "GET /jobs/{job_id}/applications": Applicants,
    "POST /jobs/{job_id}/assign": Job,
    "PUT /businesses/me/favourites/{worker_id}": RosterEntry,
    "DELETE /businesses/me/favourites/{worker_id}": None,  # 204, no body
    "GET /businesses/me/favourites": Favourites,
    "PUT /businesses/me/blocked/{worker_id}": RosterEntry,
    "DELETE /businesses/me/blocked/{worker_id}": None,  # 204, no body
    "GET /businesses/me/blocked": Blocked,
}
NOT_JSON = {"GET /console", "GET /console/{asset}"}


class Recorder:
    """Calls through the real handlers, keeping every answer's text as it left."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.seen: dict[str, list[tuple[int, str]]] = {}

    def call(
        self, method: str, path: str, who: Who | None, body: Any = None, **options: Any
    ) -> Any:
        route, event = self.api.event(method, path, who, body, **options)
        result = handler_of(route)(event, LambdaContext(function_name=route.function))
        text = result.get("body") or ""
        self.seen.setdefault(route.route_key, []).append((result["statusCode"], text))
        return json.loads(text) if text else None


def test_every_route_answers_in_the_one_form(
    api: Api, conn: Connection, queues: dict[str, str], cache: Any, waves: Waves
) -> None:
    calls = Recorder(api)
    holder, offered = worker("form-holder"), worker("form-offered")
    for who in (holder, offered):
        calls.call("PUT", "/workers/me", who, {"skills": ["wash", "ünïcödé"]})
    position = {"lat": 12.972, "lng": 77.5946}
    calls.call("PUT", "/workers/me/location", offered, position)
    job_body = {
        "location": {"lat": 12.9716, "lng": 77.5946},
        "skills": ["wash", "ünïcödé"],
        "window": {"start": "2030-12-01T09:00:00+05:30", "end": "2030-12-01T11:00:00Z"},
        "min_rating": None,
    }
    job = calls.call("POST", "/jobs", BUSINESS, job_body, key="form-create")
    calls.call("POST", "/jobs", BUSINESS, job_body, key="form-create")  # a replay
    other = calls.call(
        "POST", "/jobs", BUSINESS, {**job_body, "location": {"lat": -0.0, "lng": 1e-7}}
    )
    drain(queues["outbox"])
    from dispatch.offers.models import WaveRequest

    waves.run(conn, WaveRequest(job_id=job["id"], version=1, wave=1))
    calls.call("GET", "/workers/me/offers", offered, key=None)
    calls.call("GET", "/jobs/nearby?lat=12.972&lng=77.5946", offered, key=None)
    calls.call("POST", f"/jobs/{other['id']}/decline", offered, {})
    held = calls.call("POST", f"/jobs/{job['id']}/accept", holder, {})
    calls.call("POST", f"/jobs/{job['id']}/accept", offered, {})  # 409 JOB_TAKEN
    held = calls.call(
        "POST",
        f"/jobs/{job['id']}/transitions",
        holder,
        {"event": "check_in", "version": held["version"]},
    )
    calls.call("POST", "/photos", holder, {"content_type": "image/jpeg"})
    photo = upload_photo(api, holder)
    held = calls.call("PUT", f"/jobs/{job['id']}/photos/before", holder, {"photo_id": photo})
    held = step(api, held, holder, "start")
    held = attach(api, held, holder, "after")
    step(api, held, holder, "complete")
    calls.call("POST", f"/jobs/{job['id']}/rating", BUSINESS, {"stars": 5})
    calls.call("GET", f"/jobs/{job['id']}", BUSINESS, key=None)
    calls.call("GET", f"/jobs/{job['id']}/events", BUSINESS, key=None)
    calls.call("GET", "/ops/jobs?bbox=77,12,78,13&status=completed,open", OPS, key=None)
    calls.call("GET", "/ops/workers?bbox=77,12,78,13", OPS, key=None)
    calls.call("GET", "/ops/events?limit=500", OPS, key=None)
    calls.call("GET", "/ops/summary", OPS, key=None)
    calls.call("GET", "/health", None, key=None)
    calls.call("POST", "/jobs", BUSINESS, {**job_body, "skills": "wash"})  # 400 with details
    calls.call("GET", "/jobs/00000000-0000-0000-0000-000000000000", BUSINESS, key=None)  # 404
    chosen = calls.call("POST", "/jobs", BUSINESS, {**job_body, "assignment": "business_choice"})
    applicant = worker("form-applicant")
    calls.call("PUT", "/workers/me", applicant, {"skills": ["wash", "ünïcödé"]})
    calls.call("PUT", "/workers/me/location", applicant, position)
    for who in (applicant, offered):
        calls.call("POST", f"/jobs/{chosen['id']}/applications", who, {"note": "ünïcödé ✓"})
    calls.call("DELETE", f"/jobs/{chosen['id']}/applications/me", offered)
    calls.call("GET", f"/jobs/{chosen['id']}/applications", BUSINESS, key=None)
    calls.call(
        "POST",
        f"/jobs/{chosen['id']}/assign",
        BUSINESS,
        {"worker_id": "worker-form-applicant", "version": chosen["version"]},
    )
    for roster in ("favourites", "blocked"):
        calls.call("PUT", f"/businesses/me/{roster}/worker-ünï-{roster}", BUSINESS, key="r")
        calls.call("GET", f"/businesses/me/{roster}", BUSINESS, key=None)
        calls.call("DELETE", f"/businesses/me/{roster}/worker-ünï-{roster}", BUSINESS, key="r")

    assert set(calls.seen) | NOT_JSON == {route.route_key for route in api.routes}
    for route_key, answers in calls.seen.items():
        for status, text in answers:
            if status == 204:
                assert text == "", route_key
            elif status < 300:
                in_the_one_form(text, ANSWERS[route_key])
            else:
                in_the_one_form(text, ErrorBody)
    statuses = {status for answers in calls.seen.values() for status, _ in answers}
    assert {200, 201, 204, 400, 404, 409} <= statuses

    # A write's answer, a replay of it and a read of the same job are the same bytes; the
    # last event's data is the Job as GET shows it, byte for byte.
    created, replayed = calls.seen["POST /jobs"][:2]
    assert created == replayed
    read = calls.seen["GET /jobs/{job_id}"][0]
    history = json.loads(calls.seen["GET /jobs/{job_id}/events"][0][1])["events"]
    assert to_json(history[-1]["data"]) == read[1]


def test_every_event_on_the_bus_is_in_the_one_form(
    api: Api, conn: Connection, queues: dict[str, str], cache: Any, waves: Waves
) -> None:
    """What consumers receive: each event's detail, as the publisher put it (the job's own and
    the offer round's), in the one form and its type's model order."""
    from dispatch.offers.models import WaveRequest

    make_worker(api, worker("bus-near"))
    api.call("PUT", "/workers/me/location", worker("bus-near"), {"lat": 12.972, "lng": 77.5946})
    reply = api.call(
        "POST",
        "/jobs",
        BUSINESS,
        {
            "location": {"lat": 12.9716, "lng": 77.5946},
            "skills": ["wash"],
            "window": {"start": "2030-12-01T09:00:00Z", "end": "2030-12-01T11:00:00.5Z"},
            "min_rating": None,  # the worker has no rating yet: a minimum would skip them
        },
    )
    job = reply.body
    drain(queues["outbox"])
    request = WaveRequest(job_id=job["id"], version=1, wave=1)
    from dispatch.offers import waves as offer_waves

    offer_waves.run_wave(conn, request, lambda *_: None)
    final = WaveRequest(job_id=job["id"], version=1, wave=99)
    offer_waves.run_wave(conn, final, lambda *_: None)
    drain(queues["outbox"])  # the round's events travel the outbox, as the job's do
    bodies = [message["detail"] for message in on_the_bus(queues["tap"])]
    assert [b["type"] for b in bodies] == ["job.created", "offer.created", "job.unfilled"]
    for body in bodies:
        in_model_order(body, Event)
    # The detail's bytes: the publisher sends the event's text as Postgres wrote it.
    rows = conn.execute(
        "SELECT dispatch_event(e)::text AS text FROM job_events e"
        " UNION ALL SELECT dispatch_event(o)::text FROM offer_events o"
    ).fetchall()
    for row in rows:
        in_the_one_form(row["text"], Event)
    created = next(json.loads(r["text"]) for r in rows if '"job.created"' in r["text"])
    assert to_json(created["data"]) == reply_text(api, job["id"])


def reply_text(api: Api, job_id: str) -> str:
    route, event = api.event("GET", f"/jobs/{job_id}", BUSINESS, key=None)
    text: str = handler_of(route)(event, LambdaContext(function_name=route.function))["body"]
    return text
