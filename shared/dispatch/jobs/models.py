"""What the job routes answer and the job events carry (the Job resource and its kin), and the
jobs' vocabulary: statuses, event types. What the commands take in is dispatch.jobs.requests.

A stored job becomes an answer through `Job.from_document`, which reads the document Postgres
wrote (`dispatch_job`) and checks types, never input rules: a job whose window ended yesterday
reads like any other.
"""

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from dispatch.events import Event
from dispatch.models import Document, Model, Resource


class JobStatus(StrEnum):
    OPEN = "open"
    ASSIGNED = "assigned"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"  # the window ended before anyone held it


# A worker holds the job (one at a time: jobs_one_live_job_per_worker).
LIVE_STATUSES = frozenset({JobStatus.ASSIGNED, JobStatus.IN_PROGRESS})
# Nothing moves the job any more.
FINISHED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.CANCELLED, JobStatus.EXPIRED})
# A worker is assigned: holding the job or having done it (jobs_assignee_iff_taken).
TAKEN_STATUSES = LIVE_STATUSES | {JobStatus.COMPLETED}


class JobEventType(StrEnum):
    """Every change of a job writes exactly one event of one of these types."""

    CREATED = "job.created"
    ASSIGNED = "job.assigned"
    CHECKED_IN = "job.checked_in"
    RELEASED = "job.released"
    REOPENED = "job.reopened"
    STARTED = "job.started"
    COMPLETED = "job.completed"
    CANCELLED = "job.cancelled"
    PHOTO_ATTACHED = "job.photo_attached"
    EXPIRED = "job.expired"
    RATED = "job.rated"


class Assignment(StrEnum):
    """Who decides who gets the job: the first qualified worker to accept, or the business,
    choosing among those who applied."""

    FIRST_COME = "first_come"
    BUSINESS_CHOICE = "business_choice"


class TransitionEvent(StrEnum):
    CHECK_IN = "check_in"
    RELEASE = "release"
    START = "start"
    COMPLETE = "complete"
    CANCEL = "cancel"


class Photo(StrEnum):
    BEFORE = "before"
    AFTER = "after"


class JobLocation(Model):
    lat: float
    lng: float


class JobWindow(Model):
    start: datetime
    end: datetime


class Job(Document):
    """The public Job: what GET /jobs/{job_id} shows and every job event's `data` carries."""

    id: UUID
    status: JobStatus
    version: int
    business_id: str
    assignee_id: str | None
    location: JobLocation
    skills: list[str]
    window: JobWindow
    min_rating: float | None
    lease_expires_at: datetime | None
    before_photo_id: UUID | None
    after_photo_id: UUID | None
    rating: int | None  # the stars the business gave the work, once completed
    created_at: datetime
    updated_at: datetime
    assignment: Assignment
    auto_pick: bool | None  # business_choice only
    choose_within_s: int | None  # business_choice only, when the business set a deadline
    offer_first_to: Literal["favourites"] | None  # each round begins with favourites

    def changed_job(self) -> UUID:
        return self.id


class JobSummary(Document):
    """What an offered worker needs to decide (they may not read the job until they hold it):
    the Job's own values, fewer fields (`dispatch_job_summary`)."""

    id: UUID
    version: int
    location: JobLocation
    skills: list[str]
    window: JobWindow
    min_rating: float | None


class NearbyJob(Job):
    distance_m: float


class NearbyJobs(Resource):
    jobs: list[NearbyJob]

    def document(self) -> dict[str, Any]:
        return {"jobs": [job.document() for job in self.jobs]}


class JobRating(Document):
    job_id: UUID
    worker_id: str
    stars: int

    def changed_job(self) -> UUID:
        return self.job_id


class PhotoUpload(Document):
    """Where to upload: a form POST to `upload_url` with every field of `upload_fields`,
    then the file as the last field, `file` (S3's presigned POST)."""

    photo_id: UUID
    upload_url: str
    upload_fields: dict[str, str]
    expires_in: int


# -- events -----------------------------------------------------------------------------------


class JobChanged(Event):
    """A change of the job: `data` is the public Job at `version`, exactly as GET shows it."""

    type: JobEventType
    data: Job  # type: ignore[assignment]


class JobEvents(Resource):
    """GET /jobs/{job_id}/events, in version order: the job's changes (data: the Job), and for
    its business and ops its offers, applications, unfilled rounds and returns to the
    business's choice; for the assignee, those naming it."""

    events: list[Event]  # each by its type: a change (JobChanged) or an offer event

    def document(self) -> dict[str, Any]:
        return {"events": [event.document() for event in self.events]}


# Each job event type and the model that describes it (the AsyncAPI document's job messages).
JOB_EVENT_MODELS: dict[str, type[Event]] = {kind.value: JobChanged for kind in JobEventType}
