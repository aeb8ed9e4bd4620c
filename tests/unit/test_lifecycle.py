"""The state machine table itself: what the contract's table says, and nothing more."""

from dispatch.auth import Role
from dispatch.jobs.lifecycle import MACHINE, PHOTO_SLOT_STATUS, Actor
from dispatch.jobs.models import JobEventType, JobStatus, Photo, TransitionEvent

S = JobStatus


def test_the_table_is_the_contracts() -> None:
    table = {
        event: (set(move.sources), move.target, move.actor, move.event_type, move.needs)
        for event, move in MACHINE.items()
    }
    assert table == {
        TransitionEvent.CHECK_IN: (
            {S.ASSIGNED}, S.ASSIGNED, Actor.ASSIGNEE, JobEventType.CHECKED_IN, None
        ),
        TransitionEvent.RELEASE: (
            {S.ASSIGNED}, S.OPEN, Actor.ASSIGNEE, JobEventType.RELEASED, None
        ),
        TransitionEvent.START: (
            {S.ASSIGNED}, S.IN_PROGRESS, Actor.ASSIGNEE, JobEventType.STARTED, Photo.BEFORE
        ),
        TransitionEvent.COMPLETE: (
            {S.IN_PROGRESS}, S.COMPLETED, Actor.ASSIGNEE, JobEventType.COMPLETED, Photo.AFTER
        ),
        TransitionEvent.CANCEL: (
            {S.OPEN, S.ASSIGNED}, S.CANCELLED, Actor.OWNER, JobEventType.CANCELLED, None
        ),
    }  # fmt: skip


def test_finished_jobs_move_no_more_and_each_event_type_is_one_move() -> None:
    for move in MACHINE.values():
        assert not {S.COMPLETED, S.CANCELLED} & move.sources
    assert len({move.event_type for move in MACHINE.values()}) == len(MACHINE)


def test_who_acts_and_which_photo_slot_is_open_when() -> None:
    assert (Actor.ASSIGNEE.role, Actor.OWNER.role) == (Role.WORKER, Role.BUSINESS)
    assert PHOTO_SLOT_STATUS == {Photo.BEFORE: S.ASSIGNED, Photo.AFTER: S.IN_PROGRESS}
    # The photo a move needs is the one whose slot is open in the move's source status.
    for move in MACHINE.values():
        if move.needs is not None:
            assert move.sources == {PHOTO_SLOT_STATUS[move.needs]}
