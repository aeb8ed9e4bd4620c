"""Why an assign or an apply changed nothing: pure functions over the facts one read returned
(`sql.ASSIGN_FAILURE_FACTS`, `sql.APPLY_FAILURE_FACTS`), each condition read by name."""

from typing import Any

from dispatch.errors import Code
from dispatch.jobs.models import FINISHED_STATUSES, JobStatus
from dispatch.jobs.rules import Facts, Refusal

# The refusal of each condition of an assign, in the order a person can act on them.
ASSIGN_REFUSALS: dict[str, Code] = {
    "owned": Code.NOT_FOUND,  # never tell a stranger that the job exists
    "choice": Code.JOB_IS_FIRST_COME,
    "claimable": Code.JOB_ALREADY_ASSIGNED,  # lost to another assign or the auto-pick
    "window_open": Code.JOB_UNAVAILABLE,
    "at_version": Code.VERSION_CONFLICT,
    "applicant": Code.NOT_AN_APPLICANT,
    "not_blocked": Code.APPLICANT_BLOCKED,
    "has_skills": Code.APPLICANT_NOT_QUALIFIED,
    "rated_enough": Code.APPLICANT_NOT_QUALIFIED,
    "worker_free": Code.APPLICANT_BUSY,
}

_CAUSES: dict[str, tuple[str, str]] = {
    "has_skills": ("worker_id", "lacks a skill the job needs"),
    "rated_enough": ("worker_id", "is rated below the job's min_rating"),
}


def assign_refusal(facts: Facts | None) -> Refusal:
    """The first refusal a person can act on; the details name the cause of a 403."""
    if facts is None:
        return Code.NOT_FOUND, []
    if facts["owned"] and JobStatus(facts["status"]) in FINISHED_STATUSES:
        return Code.JOB_UNAVAILABLE, []
    for condition, refusal in ASSIGN_REFUSALS.items():
        if not facts[condition]:
            return refusal, _details(condition)
    return Code.JOB_ALREADY_ASSIGNED, []  # assigned and given back between our update and read


# The refusal of each condition of an application, in the same spirit.
APPLY_REFUSALS: dict[str, Code] = {
    "not_blocked": Code.BLOCKED_BY_BUSINESS,
    "choice": Code.JOB_IS_FIRST_COME,  # accept it instead
    "open": Code.JOB_TAKEN,  # no longer open: somebody holds it (finished: below)
    "window_open": Code.JOB_UNAVAILABLE,
    "has_skills": Code.SKILLS_MISSING,
    "rated_enough": Code.RATING_TOO_LOW,
}


def apply_refusal(facts: Facts | None) -> Code:
    if facts is None:
        return Code.NOT_FOUND
    if not facts["not_blocked"]:
        return Code.BLOCKED_BY_BUSINESS
    if JobStatus(facts["status"]) in FINISHED_STATUSES:
        return Code.JOB_UNAVAILABLE
    for condition, refusal in APPLY_REFUSALS.items():
        if not facts[condition]:
            return refusal
    return Code.JOB_TAKEN  # it was open a moment ago: assigned between our insert and read


def _details(condition: str) -> list[dict[str, Any]]:
    cause = _CAUSES.get(condition)
    return [{"field": cause[0], "problem": cause[1]}] if cause else []
