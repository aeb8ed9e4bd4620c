"""Issue 34 points 3 and 6 over real HTTP through the local gateway: one rule for job ids in the
path (the canonical UUID in either case; anything else 400, never 404 or 200), roster worker ids
the documented pattern allows reach the roster, a whole number in any JSON spelling is an
integer, and a 201 says where."""

import uuid

import pytest

from tests.e2e.client import Client
from tests.support import job_body

U = "01935f7e-0000-7000-8000-0000000000aa"


@pytest.mark.parametrize(
    "spelling",
    ["%00", "%09", "%0B", "%ff", U + "%0A", U + "%20", "%7B" + U + "%7D", U.replace("-", "")],
)
def test_a_job_id_in_any_other_spelling_is_400(stack: str, spelling: str) -> None:
    business = Client(stack, "ids-biz", "business")
    worker = Client(stack, "ids-worker", "worker")
    for reply in (
        business.send("GET", f"/jobs/{spelling}"),
        business.send("GET", f"/jobs/{spelling}/events"),
        worker.send("POST", f"/jobs/{spelling}/accept", {}),
    ):
        error = reply.json()["error"]
        assert (reply.status_code, error["code"]) == (400, "VALIDATION_FAILED"), reply.text
        assert [d["field"] for d in error["details"]] == ["path.job_id"]


def test_upper_case_is_the_same_job_and_a_201_says_where(stack: str) -> None:
    business = Client(stack, "ids-biz-2", "business")
    posted = business.send("POST", "/jobs", job_body(["wash"]))
    assert posted.status_code == 201, posted.text
    job = posted.json()
    assert posted.headers["Location"] == f"/jobs/{job['id']}"
    read = business.send("GET", f"/jobs/{job['id'].upper()}")
    assert (read.status_code, read.json()["id"]) == (200, job["id"])
    worker = Client(stack, "ids-worker-2", "worker")
    assert worker.send("PUT", "/workers/me", {"skills": ["wash"]}).status_code == 200
    key = str(uuid.uuid4())
    accept = worker.session.post(
        f"{stack}/jobs/{job['id'].upper()}/accept",
        data=b'{"version": 1.0}',
        headers={"Idempotency-Key": key},
        timeout=30,
    )
    assert (accept.status_code, accept.json()["version"]) == (200, 2), accept.text
    again = worker.send("POST", f"/jobs/{job['id']}/accept", {"version": 1}, key=key)
    assert (again.status_code, again.headers.get("Idempotent-Replayed")) == (200, "true")


@pytest.mark.parametrize(("encoded", "worker_id"), [("a%5Cb", "a\\b"), ("a%C2%A0b", "a\u00a0b")])
def test_roster_worker_ids_the_pattern_allows(stack: str, encoded: str, worker_id: str) -> None:
    business = Client(stack, "ids-roster-biz", "business")
    put = business.send("PUT", f"/businesses/me/favourites/{encoded}")
    assert (put.status_code, put.json()["worker_id"]) == (200, worker_id), put.text
    listed = business.send("GET", "/businesses/me/favourites").json()["favourites"]
    assert worker_id in [entry["worker_id"] for entry in listed]
    assert business.send("DELETE", f"/businesses/me/favourites/{encoded}").status_code == 204
