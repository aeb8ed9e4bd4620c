"""Why a command changed nothing, named from the facts alone (dispatch.jobs.rules)."""

from typing import Any

import pytest

from dispatch.errors import Code
from dispatch.jobs.lifecycle import MACHINE
from dispatch.jobs.models import JobStatus, Photo, TransitionEvent
from dispatch.jobs.rules import (
    accept_refusal,
    attach_refusal,
    rating_refusal,
    transition_refusal,
)

OPEN = {
    "status": "open",
    "version": 3,
    "assignee_id": None,
    "lease_expired": False,
    "window_ended": False,
    "has_skills": True,
    "rated_enough": True,
    "worker_busy": False,
}


def job(**changes: Any) -> dict[str, Any]:
    return {**OPEN, **changes}


@pytest.mark.parametrize(
    ("facts", "version", "code"),
    [
        (None, None, Code.NOT_FOUND),
        (job(status="completed"), None, Code.JOB_UNAVAILABLE),
        (job(status="cancelled", has_skills=False), 1, Code.JOB_UNAVAILABLE),  # first cause
        (job(status="assigned", assignee_id="w-2"), None, Code.JOB_TAKEN),
        (job(status="in_progress", assignee_id="w-2"), 3, Code.JOB_TAKEN),
        (job(status="assigned", assignee_id="me"), None, Code.WORKER_BUSY),  # tapped again
        (job(status="assigned", assignee_id="w-2", lease_expired=True), 2, Code.VERSION_CONFLICT),
        (job(), 2, Code.VERSION_CONFLICT),
        (job(has_skills=False), 3, Code.SKILLS_MISSING),
        (job(has_skills=False, worker_busy=True), None, Code.SKILLS_MISSING),
        (job(worker_busy=True), None, Code.WORKER_BUSY),
        (job(status="expired"), None, Code.JOB_UNAVAILABLE),
        (job(window_ended=True), None, Code.JOB_UNAVAILABLE),  # before the sweeper expired it
        (job(window_ended=True, has_skills=False), None, Code.JOB_UNAVAILABLE),
        (job(status="assigned", assignee_id="w-2", window_ended=True), None, Code.JOB_TAKEN),
        (job(rated_enough=False), None, Code.RATING_TOO_LOW),
        (job(rated_enough=False, has_skills=False), None, Code.SKILLS_MISSING),
        (job(rated_enough=False, worker_busy=True), None, Code.RATING_TOO_LOW),
        (job(), None, Code.JOB_TAKEN),  # claimable again: someone won and gave it back
    ],
)
def test_accept_refusals(facts: dict[str, Any] | None, version: int | None, code: Code) -> None:
    assert accept_refusal(facts, "me", version) is code


HELD = {
    "status": "assigned",
    "version": 4,
    "assignee_id": "me",
    "business_id": "biz",
    "before_photo_id": None,
    "after_photo_id": None,
    "acted": True,
    "photo_owner": "me",
    "rating": None,
}


def held(**changes: Any) -> dict[str, Any]:
    return {**HELD, **changes}


@pytest.mark.parametrize(
    ("facts", "actor", "event", "version", "code"),
    [
        (None, "me", TransitionEvent.CHECK_IN, 4, Code.NOT_FOUND),
        (held(assignee_id="w-2", acted=False), "me", TransitionEvent.CHECK_IN, 4, Code.NOT_FOUND),
        (held(assignee_id="w-2"), "me", TransitionEvent.CHECK_IN, 4, Code.VERSION_CONFLICT),
        (held(assignee_id="w-2"), "me", TransitionEvent.CHECK_IN, 5, Code.VERSION_CONFLICT),
        (held(), "me", TransitionEvent.CHECK_IN, 3, Code.VERSION_CONFLICT),
        (held(status="in_progress"), "me", TransitionEvent.RELEASE, 4, Code.ILLEGAL_TRANSITION),
        (held(), "me", TransitionEvent.START, 4, Code.BEFORE_PHOTO_REQUIRED),
        (held(status="in_progress"), "me", TransitionEvent.COMPLETE, 4, Code.AFTER_PHOTO_REQUIRED),
        (held(), "biz", TransitionEvent.CANCEL, 4, Code.VERSION_CONFLICT),  # raced
        (held(), "other-biz", TransitionEvent.CANCEL, 4, Code.NOT_FOUND),
        (held(status="completed"), "biz", TransitionEvent.CANCEL, 4, Code.ILLEGAL_TRANSITION),
    ],
)
def test_transition_refusals(
    facts: dict[str, Any] | None, actor: str, event: TransitionEvent, version: int, code: Code
) -> None:
    assert transition_refusal(facts, actor, version, MACHINE[event]) is code


@pytest.mark.parametrize(
    ("facts", "slot", "code"),
    [
        (None, Photo.BEFORE, Code.NOT_FOUND),
        (held(assignee_id="w-2"), Photo.BEFORE, Code.NOT_FOUND),
        (held(), Photo.AFTER, Code.PHOTO_SLOT_CLOSED),
        (held(status="in_progress"), Photo.BEFORE, Code.PHOTO_SLOT_CLOSED),
        (held(photo_owner="w-2"), Photo.BEFORE, Code.NOT_FOUND),
        (held(photo_owner=None), Photo.BEFORE, Code.NOT_FOUND),
        (held(after_photo_id="p-1"), Photo.BEFORE, Code.VALIDATION_FAILED),
        (held(), Photo.BEFORE, Code.VERSION_CONFLICT),
    ],
)
def test_attach_refusals(facts: dict[str, Any] | None, slot: Photo, code: Code) -> None:
    slot_status = JobStatus.ASSIGNED if slot is Photo.BEFORE else JobStatus.IN_PROGRESS
    refused, details = attach_refusal(facts, "me", "p-1", slot, slot_status)
    assert refused is code
    assert bool(details) == (code is Code.VALIDATION_FAILED)
    # An upload that is not right is named only when nothing about the job refuses first.
    missing = (Code.PHOTO_NOT_UPLOADED, [])
    with_upload = attach_refusal(facts, "me", "p-1", slot, slot_status, missing)
    expected = missing[0] if code is Code.VERSION_CONFLICT else code
    assert with_upload[0] is expected


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (None, Code.NOT_FOUND),
        (held(business_id="other-biz", status="completed"), Code.NOT_FOUND),
        (held(status="in_progress"), Code.ILLEGAL_TRANSITION),
        (held(status="completed", rating=4), Code.ALREADY_RATED),
        (held(status="cancelled", rating=None), Code.ILLEGAL_TRANSITION),
    ],
)
def test_rating_refusals(facts: dict[str, Any] | None, code: Code) -> None:
    assert rating_refusal(facts, "biz") is code
