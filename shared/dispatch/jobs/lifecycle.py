"""The state machine: one table, used by the transition command, the handler and the tests."""

from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from dispatch.auth import Role
from dispatch.jobs.models import JobStatus, Strict


class TransitionEvent(StrEnum):
    CHECK_IN = "check_in"
    RELEASE = "release"
    START = "start"
    COMPLETE = "complete"
    CANCEL = "cancel"


class Actor(StrEnum):
    ASSIGNEE = "assignee"  # the worker holding the job
    OWNER = "owner"  # the business that posted it

    @property
    def role(self) -> Role:
        return Role.WORKER if self is Actor.ASSIGNEE else Role.BUSINESS


class Photo(StrEnum):
    BEFORE = "before"
    AFTER = "after"


@dataclass(frozen=True)
class Transition:
    sources: frozenset[JobStatus]
    target: JobStatus
    actor: Actor
    event_type: str
    needs: Photo | None = None


MACHINE: dict[TransitionEvent, Transition] = {
    # Extends the lease; allowed until someone else holds the job (the version fences that).
    TransitionEvent.CHECK_IN: Transition(
        frozenset({JobStatus.ASSIGNED}), JobStatus.ASSIGNED, Actor.ASSIGNEE, "job.checked_in"
    ),
    TransitionEvent.RELEASE: Transition(
        frozenset({JobStatus.ASSIGNED}), JobStatus.OPEN, Actor.ASSIGNEE, "job.released"
    ),
    TransitionEvent.START: Transition(
        frozenset({JobStatus.ASSIGNED}),
        JobStatus.IN_PROGRESS,
        Actor.ASSIGNEE,
        "job.started",
        Photo.BEFORE,
    ),
    TransitionEvent.COMPLETE: Transition(
        frozenset({JobStatus.IN_PROGRESS}),
        JobStatus.COMPLETED,
        Actor.ASSIGNEE,
        "job.completed",
        Photo.AFTER,
    ),
    TransitionEvent.CANCEL: Transition(
        frozenset({JobStatus.OPEN, JobStatus.ASSIGNED}),
        JobStatus.CANCELLED,
        Actor.OWNER,
        "job.cancelled",
    ),
}

# The status in which each photo slot is open; past it, the slot is frozen.
PHOTO_SLOT_STATUS: dict[Photo, JobStatus] = {
    Photo.BEFORE: JobStatus.ASSIGNED,
    Photo.AFTER: JobStatus.IN_PROGRESS,
}


class TransitionRequest(Strict):
    event: TransitionEvent
    version: int = Field(ge=1, le=2**31 - 1, strict=True)
