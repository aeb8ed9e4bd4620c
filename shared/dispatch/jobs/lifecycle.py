"""The state machine: one table, used by the transition command, the handler and the tests."""

from dataclasses import dataclass
from enum import StrEnum

from dispatch.auth import Role
from dispatch.jobs.models import JobEventType, JobStatus, Photo, TransitionEvent


class Actor(StrEnum):
    ASSIGNEE = "assignee"  # the worker holding the job
    OWNER = "owner"  # the business that posted it

    @property
    def role(self) -> Role:
        return Role.WORKER if self is Actor.ASSIGNEE else Role.BUSINESS


@dataclass(frozen=True)
class Transition:
    sources: frozenset[JobStatus]
    target: JobStatus
    actor: Actor
    event_type: JobEventType
    needs: Photo | None = None
    # Only while the job's window lasts (after it: 409 JOB_UNAVAILABLE). A holder renews the
    # lease and starts the work within the window; a lease never outlives it.
    within_window: bool = False


MACHINE: dict[TransitionEvent, Transition] = {
    # Extends the lease (to the window's end at most); allowed until someone else holds the job
    # (the version fences that) and while the window lasts.
    TransitionEvent.CHECK_IN: Transition(
        frozenset({JobStatus.ASSIGNED}),
        JobStatus.ASSIGNED,
        Actor.ASSIGNEE,
        JobEventType.CHECKED_IN,
        within_window=True,
    ),
    TransitionEvent.RELEASE: Transition(
        frozenset({JobStatus.ASSIGNED}), JobStatus.OPEN, Actor.ASSIGNEE, JobEventType.RELEASED
    ),
    TransitionEvent.START: Transition(
        frozenset({JobStatus.ASSIGNED}),
        JobStatus.IN_PROGRESS,
        Actor.ASSIGNEE,
        JobEventType.STARTED,
        Photo.BEFORE,
        within_window=True,
    ),
    TransitionEvent.COMPLETE: Transition(
        frozenset({JobStatus.IN_PROGRESS}),
        JobStatus.COMPLETED,
        Actor.ASSIGNEE,
        JobEventType.COMPLETED,
        Photo.AFTER,
    ),
    TransitionEvent.CANCEL: Transition(
        frozenset({JobStatus.OPEN, JobStatus.ASSIGNED}),
        JobStatus.CANCELLED,
        Actor.OWNER,
        JobEventType.CANCELLED,
    ),
}

# The status in which each photo slot is open; past it, the slot is frozen.
PHOTO_SLOT_STATUS: dict[Photo, JobStatus] = {
    Photo.BEFORE: JobStatus.ASSIGNED,
    Photo.AFTER: JobStatus.IN_PROGRESS,
}
