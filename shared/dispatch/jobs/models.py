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

from pydantic import AfterValidator, AwareDatetime, BaseModel, Field, model_validator

from dispatch.models import Document, Resource, Strict


class JobStatus(StrEnum):
    OPEN = "open"
    ASSIGNED = "assigned"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"  # the window ended before anyone held it


LIVE_STATUSES = frozenset({JobStatus.ASSIGNED, JobStatus.IN_PROGRESS})
FINISHED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.CANCELLED, JobStatus.EXPIRED})


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


def _distinct(skills: list[str]) -> list[str]:
    return list(dict.fromkeys(skills))


Skill = Annotated[
    str, Field(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$", strict=True)
]
Skills = Annotated[list[Skill], Field(max_length=32), AfterValidator(_distinct)]


class Location(Strict):
    lat: float = Field(ge=-90, le=90, strict=True)
    lng: float = Field(ge=-180, le=180, strict=True)


class Window(Strict):
    start: AwareDatetime
    end: AwareDatetime

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


class RateJob(Strict):
    stars: int = Field(ge=1, le=5, strict=True)


class AcceptJob(Strict):
    version: int | None = Field(None, ge=1, le=2**31 - 1, strict=True)


class TransitionRequest(Strict):
    event: TransitionEvent
    version: int = Field(ge=1, le=2**31 - 1, strict=True)


class PhotoRequest(Strict):
    content_type: Literal["image/jpeg", "image/png", "image/heic", "image/webp"]


class AttachPhoto(Strict):
    photo_id: UUID


# -- output -----------------------------------------------------------------------------------


class JobLocation(BaseModel):
    lat: float
    lng: float


class JobWindow(BaseModel):
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
