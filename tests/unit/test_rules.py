"""Why a command changed nothing, named from the facts alone (dispatch.jobs.rules)."""

from typing import Any

import pytest

from dispatch.errors import Code
from dispatch.jobs.lifecycle import MACHINE
from dispatch.jobs.models import JobStatus, Photo, TransitionEvent
from dispatch.jobs.rules import (
    ACCEPT_CAUSES,
    Refusal,
    accept_refusal,
    attach_refusal,
    rating_refusal,
    transition_refusal,
)

OPEN = {
    "status": "open",
    "assignee_id": None,
    **dict.fromkeys(ACCEPT_CAUSES, True),
}


def job(**changes: Any) -> dict[str, Any]:
    return {**OPEN, **changes}


TAKEN = {"status": "assigned", "assignee_id": "w-2", "claimable": False}


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (None, Code.NOT_FOUND),
        (job(status="completed", claimable=False), Code.JOB_UNAVAILABLE),
        (job(status="cancelled", claimable=False, has_skills=False), Code.JOB_UNAVAILABLE),
        (job(**TAKEN), Code.JOB_TAKEN),
        (job(**{**TAKEN, "status": "in_progress", "at_version": False}), Code.JOB_TAKEN),
        (job(**{**TAKEN, "assignee_id": "me"}), Code.WORKER_BUSY),  # tapped again
        (job(status="assigned", assignee_id="w-2", at_version=False), Code.VERSION_CONFLICT),
        (job(at_version=False), Code.VERSION_CONFLICT),
        (job(has_skills=False), Code.SKILLS_MISSING),
        (job(has_skills=False, worker_free=False), Code.SKILLS_MISSING),
        (job(worker_free=False), Code.WORKER_BUSY),
        (job(status="expired", claimable=False), Code.JOB_UNAVAILABLE),
        (job(window_open=False), Code.JOB_UNAVAILABLE),  # before the sweeper expired it
        (job(window_open=False, has_skills=False), Code.JOB_UNAVAILABLE),
        (job(**TAKEN, window_open=False), Code.JOB_TAKEN),
        (job(rated_enough=False), Code.RATING_TOO_LOW),
        (job(rated_enough=None), Code.RATING_TOO_LOW),  # no rating at all: SQL's NULL
        (job(rated_enough=False, has_skills=False), Code.SKILLS_MISSING),
        (job(rated_enough=False, worker_free=False), Code.RATING_TOO_LOW),
        (job(), Code.JOB_TAKEN),  # claimable again: someone won and gave it back
        (job(first_come=False), Code.BUSINESS_CHOOSES),
        (job(not_blocked=False, first_come=False, has_skills=False), Code.BLOCKED_BY_BUSINESS),
        (job(**TAKEN, first_come=False), Code.BUSINESS_CHOOSES),  # apply is the way, not "taken"
        (job(status="completed", claimable=False, first_come=False), Code.JOB_UNAVAILABLE),
    ],
)
def test_accept_refusals(facts: dict[str, Any] | None, code: Code) -> None:
    assert accept_refusal(facts, "me") is code


def test_every_condition_of_an_accept_has_its_refusal() -> None:
    """The accept's causes are written once, in SQL (dispatch_holding's may_accept; the
    failure read returns each of them, tests/integration/test_who_may_hold.py); each one that
    fails alone gets a refusal of its own, so a cause added without one here fails this test."""

    def failing_alone(name: str) -> dict[str, Any]:
        held = {"status": "assigned"} if name == "claimable" else {}
        return job(**{name: False}, **held, assignee_id="w-2")

    alone = {name: accept_refusal(failing_alone(name), "me") for name in ACCEPT_CAUSES}
    assert alone == {
        "not_blocked": Code.BLOCKED_BY_BUSINESS,
        "first_come": Code.BUSINESS_CHOOSES,
        "claimable": Code.JOB_TAKEN,
        "window_open": Code.JOB_UNAVAILABLE,
        "at_version": Code.VERSION_CONFLICT,
        "has_skills": Code.SKILLS_MISSING,
        "rated_enough": Code.RATING_TOO_LOW,
        "worker_free": Code.WORKER_BUSY,
    }

    read: set[str] = set()

    class Recorded(dict[str, Any]):
        def __getitem__(self, key: str) -> Any:
            read.add(key)
            return super().__getitem__(key)

    accept_refusal(Recorded(job()), "me")
    assert set(ACCEPT_CAUSES) <= read, "the rules read every condition"


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
    "window_ended": False,
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
        # Once the window ended: no renewing the lease, too late to start; the rest goes on.
        (held(window_ended=True), "me", TransitionEvent.CHECK_IN, 4, Code.JOB_UNAVAILABLE),
        (held(window_ended=True), "me", TransitionEvent.START, 4, Code.JOB_UNAVAILABLE),
        (held(window_ended=True), "me", TransitionEvent.CHECK_IN, 3, Code.VERSION_CONFLICT),
        (held(window_ended=True), "me", TransitionEvent.RELEASE, 4, Code.VERSION_CONFLICT),
        (
            held(status="in_progress", window_ended=True),
            "me",
            TransitionEvent.COMPLETE,
            4,
            Code.AFTER_PHOTO_REQUIRED,
        ),
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
    missing: Refusal = (Code.PHOTO_NOT_UPLOADED, [])
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
