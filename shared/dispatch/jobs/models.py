"""What goes in and out of the job commands: validated input, the Job resource, its events."""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any
from uuid import UUID

from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, Field, model_validator


class JobStatus(StrEnum):
    OPEN = "open"
    ASSIGNED = "assigned"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"
    CANCELLED = "cancelled"


LIVE_STATUSES = frozenset({JobStatus.ASSIGNED, JobStatus.IN_PROGRESS})
FINISHED_STATUSES = frozenset({JobStatus.COMPLETED, JobStatus.CANCELLED})


def _distinct(skills: list[str]) -> list[str]:
    return list(dict.fromkeys(skills))


Skill = Annotated[
    str, Field(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$", strict=True)
]
Skills = Annotated[list[Skill], Field(max_length=32), AfterValidator(_distinct)]


class Strict(BaseModel):
    """Input models refuse unknown fields and NaN/infinity."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


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


class CreateJob(Strict):
    location: Location
    skills: Skills
    window: Window


class AcceptJob(Strict):
    version: int | None = Field(None, ge=1, le=2**31 - 1, strict=True)


class Job(BaseModel):
    id: UUID
    status: JobStatus
    version: int
    business_id: str
    assignee_id: str | None
    location: Location
    skills: list[str]
    window: Window
    lease_expires_at: datetime | None
    before_photo_id: UUID | None = None
    after_photo_id: UUID | None = None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "Job":
        return cls(
            id=row["id"],
            status=row["status"],
            version=row["version"],
            business_id=row["business_id"],
            assignee_id=row["assignee_id"],
            location=Location.model_construct(lat=row["lat"], lng=row["lng"]),
            # A stored window was valid when written; it need not still lie in the future.
            window=Window.model_construct(start=row["window_start"], end=row["window_end"]),
            skills=row["skills"],
            lease_expires_at=row["lease_expires_at"],
            before_photo_id=row.get("before_photo_id"),
            after_photo_id=row.get("after_photo_id"),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


class JobEvent(BaseModel):
    id: UUID
    job_id: UUID
    type: str
    version: int
    actor: str
    occurred_at: datetime
    data: dict[str, Any]


class JobEvents(BaseModel):
    events: list[JobEvent]


class NearbyJob(Job):
    distance_m: float


class NearbyJobs(BaseModel):
    jobs: list[NearbyJob]
