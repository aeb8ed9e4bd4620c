import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from dispatch.jobs.models import Job
from dispatch.jobs.requests import AcceptJob, CreateJob
from tests.support import job_body


def test_a_valid_job() -> None:
    spec = CreateJob.model_validate(job_body(["wash", "wash", "wax"]))
    assert spec.skills == ["wash", "wax"]  # duplicates folded, order kept


@pytest.mark.parametrize(
    "change",
    [
        {"location": {"lat": 90.0001, "lng": 0}},
        {"location": {"lat": 0, "lng": -180.5}},
        {"location": {"lat": math.nan, "lng": 0}},
        {"location": {"lat": math.inf, "lng": 0}},
        {"location": {"lat": "north", "lng": 0}},
        {"skills": [""]},
        {"skills": ["a\x00b"]},
        {"skills": ["s"] * 33},
        {"skills": "wash"},
        {"unknown": 1},
    ],
)
def test_invalid_jobs_are_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        CreateJob.model_validate({**job_body(), **change})


def test_window_must_be_ordered_future_and_zoned() -> None:
    now = datetime.now(UTC)
    body = job_body()
    for start, end in [
        (now + timedelta(hours=2), now + timedelta(hours=1)),
        (now - timedelta(hours=3), now - timedelta(hours=2)),
    ]:
        body["window"] = {"start": start.isoformat(), "end": end.isoformat()}
        with pytest.raises(ValidationError):
            CreateJob.model_validate(body)
    body["window"] = {"start": "2030-01-01T09:00:00", "end": "2030-01-01T10:00:00"}
    with pytest.raises(ValidationError):
        CreateJob.model_validate(body)


@pytest.mark.parametrize("version", [0, -1, 2**31, "1", 1.5, True])
def test_accept_version_must_be_a_positive_integer(version: object) -> None:
    with pytest.raises(ValidationError):
        AcceptJob.model_validate({"version": version})


def test_a_stored_job_whose_window_ended_reads_without_input_rules() -> None:
    """Found from outside: rebuilding the stored window through the input model ran its
    "end in the future" rule, and every job past its window answered 500."""
    ended = {
        "id": "01930000-0000-7000-8000-000000000001",
        "status": "completed",
        "version": 6,
        "business_id": "b-1",
        "assignee_id": "w-1",
        "location": {"lat": 12.9716, "lng": 77.5946},
        "skills": ["wash"],
        "window": {"start": "2020-01-01T09:00:00Z", "end": "2020-01-01T11:00:00Z"},
        "min_rating": 4.5,
        "lease_expires_at": None,
        "before_photo_id": "01930000-0000-7000-8000-000000000002",
        "after_photo_id": "01930000-0000-7000-8000-000000000003",
        "rating": 5,
        "created_at": "2020-01-01T08:00:00.123456Z",
        "updated_at": "2020-01-01T10:00:00Z",
        "assignment": "first_come",
        "auto_pick": None,
        "choose_within_s": None,
        "offer_first_to": None,
    }
    job = Job.from_document(ended)
    assert job.window.end < datetime.now(UTC)
    assert json.loads(job.to_json()) == ended  # the stored values, untouched
