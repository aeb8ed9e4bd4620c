"""One rule for ids (dispatch.models.ApiId): a UUID written 8-4-4-4-12 in hex, either case,
lower-cased before anything reads it (the idempotency fingerprint too); every other spelling is
a 400 naming the parameter, on every route. Whole numbers are integers in any JSON spelling
(WholeNumber), and a retry spelling them otherwise is the same request."""

from typing import Any

import pytest

from dispatch.db import Connection
from tests.support import BUSINESS, Api, make_job, make_worker, upload_photo, worker

U = "01935f7e-0000-7000-8000-0000000000aa"
NOT_IDS = [
    "\x00",
    "\t",
    "\x0b",
    "\ufffd",  # what %ff decodes to
    U + "\n",
    U + " ",
    "{" + U + "}",
    U.replace("-", ""),
    "urn:uuid:" + U,
    U[:-1] + "g",
]
W = worker(1)
JOB_ROUTES = [
    ("GET", "/jobs/{}", BUSINESS, None),
    ("GET", "/jobs/{}/events", BUSINESS, None),
    ("POST", "/jobs/{}/accept", W, {}),
    ("POST", "/jobs/{}/decline", W, {}),
    ("POST", "/jobs/{}/transitions", W, {"event": "check_in", "version": 2}),
    ("PUT", "/jobs/{}/photos/before", W, {"photo_id": U}),
    ("POST", "/jobs/{}/rating", BUSINESS, {"stars": 5}),
    ("POST", "/jobs/{}/applications", W, {}),
    ("DELETE", "/jobs/{}/applications/me", W, None),
    ("GET", "/jobs/{}/applications", BUSINESS, None),
    ("POST", "/jobs/{}/assign", BUSINESS, {"worker_id": "w", "version": 1}),
]


def refused(reply: Any, field: str) -> None:
    assert (reply.status, reply.code) == (400, "VALIDATION_FAILED"), reply.body
    assert [d["field"] for d in reply.body["error"]["details"]] == [field], reply.body


@pytest.mark.parametrize("spelling", NOT_IDS)
@pytest.mark.parametrize(("method", "path", "who", "body"), JOB_ROUTES)
def test_every_other_spelling_of_a_job_id_is_400_on_every_route(
    api: Api, spelling: str, method: str, path: str, who: tuple[str, str], body: Any
) -> None:
    refused(api.call(method, path.format(spelling), who, body), "path.job_id")


@pytest.mark.parametrize("spelling", ["{" + U + "}", U.replace("-", ""), U + "\n", "x"])
def test_a_photo_id_follows_the_same_rule(api: Api, spelling: str) -> None:
    job = make_job(api)
    route = f"/jobs/{job['id']}/photos/before"
    refused(api.call("PUT", route, worker(1), {"photo_id": spelling}), "photo_id")


def test_upper_case_is_the_same_job_and_the_same_request(api: Api, conn: Connection) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    upper = job["id"].upper()
    read = api.call("GET", f"/jobs/{upper}", BUSINESS)
    assert (read.status, read.body["id"]) == (200, job["id"])
    first = api.call("POST", f"/jobs/{upper}/accept", worker(1), {}, key="k-case")
    again = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}, key="k-case")
    assert first.status == 200, first.body
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (200, "true"), again.body
    assert again.body == first.body
    row = conn.execute("SELECT count(*) AS n FROM idempotency_keys").fetchone()
    assert row is not None and row["n"] >= 1


def test_a_photo_id_in_either_case_is_the_same_request(api: Api) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    assert api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {}).status == 200
    photo = upload_photo(api, worker(1))
    route = f"/jobs/{job['id']}/photos/before"
    first = api.call("PUT", route, worker(1), {"photo_id": photo.upper()}, key="k-photo")
    again = api.call("PUT", route, worker(1), {"photo_id": photo}, key="k-photo")
    assert first.status == 200, first.body
    assert first.body["before_photo_id"] == photo
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (200, "true"), again.body


@pytest.mark.parametrize("raw", [b'{"version": 1.0}', b'{"version": 1e0}', b'{"version": 10E-1}'])
def test_a_whole_number_in_any_spelling_is_an_integer(api: Api, raw: bytes) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    first = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), raw=raw, key="k-whole")
    assert (first.status, first.body["version"]) == (200, 2), first.body
    again = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), {"version": 1}, key="k-whole")
    assert (again.status, again.headers.get("Idempotent-Replayed")) == (200, "true"), again.body


@pytest.mark.parametrize("raw", [b'{"version": 1.5}', b'{"version": "1"}', b'{"version": true}'])
def test_a_fraction_string_or_bool_is_still_refused(api: Api, raw: bytes) -> None:
    job = make_job(api)
    make_worker(api, worker(1))
    reply = api.call("POST", f"/jobs/{job['id']}/accept", worker(1), raw=raw)
    refused(reply, "version")


@pytest.mark.parametrize("worker_id", ["a\\b", "a\u00a0b", "\u00a0", "wörker"])
def test_roster_worker_ids_the_pattern_allows_reach_the_roster(api: Api, worker_id: str) -> None:
    for roster in ("favourites", "blocked"):
        put = api.call("PUT", f"/businesses/me/{roster}/{worker_id}", BUSINESS)
        assert (put.status, put.body["worker_id"]) == (200, worker_id), put.body
        assert api.call("DELETE", f"/businesses/me/{roster}/{worker_id}", BUSINESS).status == 204


@pytest.mark.parametrize("worker_id", ["a\x00b", "a\nb", "a\x85b"])
def test_roster_worker_ids_the_pattern_refuses_are_400(api: Api, worker_id: str) -> None:
    reply = api.call("PUT", f"/businesses/me/favourites/{worker_id}", BUSINESS)
    refused(reply, "path.worker_id")
