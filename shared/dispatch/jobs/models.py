"""What goes in and out of the job commands: validated input, the Job resource, its vocabulary.

Input rules (a window that ends in the future, coordinates in range) live on the input models
only. A stored job becomes an answer through `Job.from_document`, which reads the document
Postgres wrote (`dispatch_job`) and checks types, never input rules: a job whose window ended
yesterday reads like any other.
"""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, Field, model_validator

from dispatch.events import Event
from dispatch.fields import GEO_MAX_LAT, Skills
from dispatch.models import WHOLE, ApiId, Document, Model, Resource, Strict, WholeNumber


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


# -- input ------------------------------------------------------------------------------------


def _signless_zero(value: float) -> float:
    """-0.0 is 0.0: a JSON reader loses the sign of "-0" (an int), so a job stored at -0.0
    would read back as 0 and no longer match the answer that posted it, byte for byte."""
    return value + 0.0


Coordinate = AfterValidator(_signless_zero)


class Location(Strict):
    """Where a job is posted: within the latitudes worker positions can have."""

    lat: Annotated[float, Field(ge=-GEO_MAX_LAT, le=GEO_MAX_LAT, strict=True), Coordinate]
    lng: Annotated[float, Field(ge=-180, le=180, strict=True), Coordinate]


def _in_utc(moment: datetime) -> datetime:
    """The moment in UTC, where the API writes every time: RFC 3339 has four-digit years, so a
    time whose UTC year falls outside 1 to 9999 cannot be written back (9999-12-31T23:59:59-23:59
    is in the year 10000 in UTC: it was stored, then answered 500)."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("must fall within the years 1 to 9999 in UTC") from None


Time = Annotated[AwareDatetime, AfterValidator(_in_utc)]


class Window(Strict):
    start: Time
    end: Time

    @model_validator(mode="after")
    def _ordered_and_ahead(self) -> "Window":
        if self.start >= self.end:
            raise ValueError("window.start must be before window.end")
        if self.end <= datetime.now(UTC):
            raise ValueError("window.end must be in the future")
        return self


def _two_decimals(value: float) -> float:
    if round(value, 2) != value:
        raise ValueError("at most two decimals")
    return value


MinRating = Annotated[float, Field(ge=1, le=5, strict=True), AfterValidator(_two_decimals)]


class CreateJob(Strict):
    location: Location
    skills: Skills
    window: Window
    min_rating: MinRating | None = None
    assignment: Assignment = Assignment.FIRST_COME
    # business_choice only: the system assigns the best applicant when the deadline passes
    auto_pick: bool | None = Field(None, strict=True)
    # business_choice only: seconds the business has to choose, from when the job opens
    choose_within_s: Annotated[int, Field(ge=1, le=30 * 24 * 3600, strict=True), WHOLE] | None = (
        None
    )
    # a wave 0 to the business's fresh, qualified favourites before the ordinary waves
    offer_first_to: Literal["favourites"] | None = None

    @model_validator(mode="after")
    def _choice_settings(self) -> "CreateJob":
        if self.assignment is Assignment.FIRST_COME:
            if self.auto_pick is not None or self.choose_within_s is not None:
                raise ValueError(
                    "auto_pick and choose_within_s belong to assignment business_choice"
                )
            return self
        if self.auto_pick is None:
            self.auto_pick = False
        if self.auto_pick and self.choose_within_s is None:
            raise ValueError("auto_pick needs choose_within_s: the moment to pick at")
        return self


class RateJob(Strict):
    stars: WholeNumber = Field(ge=1, le=5, strict=True)


class AcceptJob(Strict):
    version: Annotated[int, Field(ge=1, le=2**31 - 1, strict=True), WHOLE] | None = None


class TransitionRequest(Strict):
    event: TransitionEvent
    version: WholeNumber = Field(ge=1, le=2**31 - 1, strict=True)


class PhotoRequest(Strict):
    content_type: Literal["image/jpeg", "image/png", "image/heic", "image/webp"]


class AttachPhoto(Strict):
    photo_id: ApiId


# -- output -----------------------------------------------------------------------------------


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


class PhotoUpload(Resource):
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
