"""Why a command changed nothing: pure functions over the facts one read returned.

A command's conditional UPDATE matched no row; the failure path reads the facts once
(`sql.*_FAILURE_FACTS`) and these functions name the cause a person can act on, in the
contract's order. No database here: `make unit` tests every branch.
"""

from collections.abc import Mapping
from typing import Any

from dispatch.errors import Code
from dispatch.jobs.lifecycle import Actor, Transition
from dispatch.jobs.models import FINISHED_STATUSES, JobStatus, Photo

Facts = Mapping[str, Any]
Details = list[dict[str, Any]]
Refusal = tuple[Code, Details]  # a code and the details of its body


def accept_refusal(facts: Facts | None, worker_id: str) -> Code:
    """The first refusal a person can act on, from the job's state and each of the accept's
    causes (`sql.ACCEPT_FAILURE_FACTS`: dispatch_holding's, read by name)."""
    if facts is None:
        return Code.NOT_FOUND
    if JobStatus(facts["status"]) in FINISHED_STATUSES:
        return Code.JOB_UNAVAILABLE
    if not facts["not_blocked"]:  # nothing of this business's is for them
        return Code.BLOCKED_BY_BUSINESS
    if not facts["first_come"]:  # apply instead: the business chooses
        return Code.BUSINESS_CHOOSES
    if not facts["claimable"]:  # held, by a lease still running or work in progress
        # Tapping again on the job you already hold is not "taken by another worker".
        return Code.WORKER_BUSY if facts["assignee_id"] == worker_id else Code.JOB_TAKEN
    for condition, refusal in ACCEPT_REFUSALS.items():
        if not facts[condition]:
            return refusal
    # Claimable again by now: someone else won and already gave it back. Still a lost race.
    return Code.JOB_TAKEN


# The refusal of each other condition of an accept, in the order a person can act on them.
ACCEPT_REFUSALS: dict[str, Code] = {
    "not_blocked": Code.BLOCKED_BY_BUSINESS,  # named before the loop, as is the next
    "first_come": Code.BUSINESS_CHOOSES,  # named before the loop: it outranks a taken job
    "window_open": Code.JOB_UNAVAILABLE,  # nobody may take it any more, whatever the sweeper did
    "at_version": Code.VERSION_CONFLICT,
    "has_skills": Code.SKILLS_MISSING,
    "rated_enough": Code.RATING_TOO_LOW,
    "worker_free": Code.WORKER_BUSY,
}

# The causes the failure read returns (sql.ACCEPT_FAILURE_FACTS, from dispatch_holding): each
# has its refusal above, but claimable, which accept_refusal names itself (taken, or yours).
ACCEPT_CAUSES: tuple[str, ...] = (*ACCEPT_REFUSALS, "claimable")


def transition_refusal(facts: Facts | None, actor: str, version: int, move: Transition) -> Code:
    if facts is None:
        return Code.NOT_FOUND
    holds = (
        facts["assignee_id"] == actor
        if move.actor is Actor.ASSIGNEE
        else facts["business_id"] == actor
    )
    if not (holds or (move.actor is Actor.ASSIGNEE and facts["acted"])):
        return Code.NOT_FOUND  # never tell a stranger that the job exists
    if facts["version"] != version:
        return Code.VERSION_CONFLICT  # a stale view, or a lease that ran out and moved on
    if JobStatus(facts["status"]) not in move.sources:
        return Code.ILLEGAL_TRANSITION
    if not holds:
        return Code.VERSION_CONFLICT
    if move.within_window and facts["window_ended"]:
        return Code.JOB_UNAVAILABLE  # its time is over: nothing to renew, too late to start
    if move.needs is Photo.BEFORE and facts["before_photo_id"] is None:
        return Code.BEFORE_PHOTO_REQUIRED
    if move.needs is Photo.AFTER and facts["after_photo_id"] is None:
        return Code.AFTER_PHOTO_REQUIRED
    return Code.VERSION_CONFLICT  # it changed between our update and this read


def attach_refusal(
    facts: Facts | None,
    actor: str,
    photo_id: Any,
    slot: Photo,
    slot_status: JobStatus,
    upload: Refusal | None = None,
) -> Refusal:
    """Why an attach changed nothing; `upload` is what is wrong with the upload, if anything
    (not uploaded yet, not the declared type or size): named after the job's own causes."""
    if facts is None or facts["assignee_id"] != actor:
        return Code.NOT_FOUND, []
    if facts["status"] != slot_status:
        return Code.PHOTO_SLOT_CLOSED, []
    if facts["photo_owner"] != actor:
        return Code.NOT_FOUND, []  # unknown, or someone else's photo
    other = facts["after_photo_id" if slot is Photo.BEFORE else "before_photo_id"]
    if other == photo_id:
        problem = "is already the job's other photo; the before and after photos must differ"
        return Code.VALIDATION_FAILED, [{"field": "photo_id", "problem": problem}]
    if upload is not None:
        return upload
    return Code.VERSION_CONFLICT, []  # it changed between our update and this read


def rating_refusal(facts: Facts | None, business_id: str) -> Code:
    if facts is None or facts["business_id"] != business_id:
        return Code.NOT_FOUND
    if facts["rating"] is not None:
        return Code.ALREADY_RATED
    if JobStatus(facts["status"]) is not JobStatus.COMPLETED:
        return Code.ILLEGAL_TRANSITION  # only completed work is rated
    return Code.ALREADY_RATED  # rated between our update and this read
