"""Why an assign or an application changed nothing, named from the facts alone."""

from typing import Any

import pytest

from dispatch.choice.rules import APPLY_REFUSALS, ASSIGN_REFUSALS, apply_refusal, assign_refusal
from dispatch.errors import Code

OPEN = {"status": "open", "assignee_id": None, **dict.fromkeys(ASSIGN_REFUSALS, True)}


def job(**changes: Any) -> dict[str, Any]:
    return {**OPEN, **changes}


def test_every_condition_of_an_assign_has_its_refusal_in_order() -> None:
    alone = {name: assign_refusal(job(**{name: False}))[0] for name in ASSIGN_REFUSALS}
    assert alone == {
        "owned": Code.NOT_FOUND,
        "choice": Code.JOB_IS_FIRST_COME,
        "claimable": Code.JOB_ALREADY_ASSIGNED,
        "window_open": Code.JOB_UNAVAILABLE,
        "at_version": Code.VERSION_CONFLICT,
        "applicant": Code.NOT_AN_APPLICANT,
        "not_blocked": Code.APPLICANT_BLOCKED,
        "has_skills": Code.APPLICANT_NOT_QUALIFIED,
        "rated_enough": Code.APPLICANT_NOT_QUALIFIED,
        "worker_free": Code.APPLICANT_BUSY,
    }


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (None, Code.NOT_FOUND),
        (job(owned=False, status="completed"), Code.NOT_FOUND),  # a stranger learns nothing
        (job(status="completed", claimable=False), Code.JOB_UNAVAILABLE),
        (job(status="assigned", claimable=False, at_version=False), Code.JOB_ALREADY_ASSIGNED),
        (job(at_version=False, applicant=False), Code.VERSION_CONFLICT),
        (job(rated_enough=None), Code.APPLICANT_NOT_QUALIFIED),  # no rating: SQL's NULL
        (job(has_skills=False, worker_free=False), Code.APPLICANT_NOT_QUALIFIED),
        (job(), Code.JOB_ALREADY_ASSIGNED),  # assigned and given back in between
    ],
)
def test_assign_refusals(facts: dict[str, Any] | None, code: Code) -> None:
    assert assign_refusal(facts)[0] is code


def test_a_403_names_its_cause() -> None:
    assert assign_refusal(job(rated_enough=False)) == (
        Code.APPLICANT_NOT_QUALIFIED,
        [{"field": "worker_id", "problem": "is rated below the job's min_rating"}],
    )


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        (None, Code.NOT_FOUND),
        ({"status": "cancelled", "choice": True}, Code.JOB_UNAVAILABLE),
        ({"status": "assigned", "open": False}, Code.JOB_TAKEN),
        ({"status": "open", "choice": False}, Code.JOB_IS_FIRST_COME),
        ({"status": "cancelled", "not_blocked": False}, Code.BLOCKED_BY_BUSINESS),
        ({"status": "open", "window_open": False}, Code.JOB_UNAVAILABLE),
        ({"status": "open", "has_skills": False}, Code.SKILLS_MISSING),
        ({"status": "open", "rated_enough": None}, Code.RATING_TOO_LOW),
        ({"status": "open"}, Code.JOB_TAKEN),
    ],
)
def test_apply_refusals(facts: dict[str, Any] | None, code: Code) -> None:
    full = None if facts is None else {**dict.fromkeys(APPLY_REFUSALS, True), **facts}
    assert apply_refusal(full) is code
