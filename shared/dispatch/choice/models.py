"""What goes in and out when the business chooses: an application, the applicants as the
business sees them, the assign's body, and the application events."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import Field

from dispatch.events import Event
from dispatch.models import Document, Model, Resource, Strict, WholeNumber

# A worker's id as the identity provider writes it (a Cognito sub, or the local stack's names).
WorkerId = Annotated[
    str, Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f\x7f/]+$", strict=True)
]
# A few words for the business; line breaks and tabs are fine, other control characters not.
Note = Annotated[
    str, Field(max_length=280, pattern=r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]*$", strict=True)
]


class ApplyForJob(Strict):
    """The body of an application: nothing, or a note for the business."""

    note: Note | None = None


class AssignJob(Strict):
    """The business's choice: the applicant, and the job's version it chose on."""

    worker_id: WorkerId
    version: WholeNumber = Field(ge=1, le=2**31 - 1, strict=True)


class Application(Document):
    """An application (`dispatch_application_document`): the 201 answer of an apply, and the
    data of `application.created` and `application.withdrawn`."""

    job_id: UUID
    worker_id: str
    applied_at: datetime
    note: str | None

    def changed_job(self) -> UUID:
        return self.job_id  # its application.created, relayed after the apply commits


class Applicant(Document):
    """One current applicant, with what the business needs to choose."""

    worker_id: str
    applied_at: datetime
    note: str | None
    rating: float | None  # none until the worker's first rated job
    distance_m: float | None  # from the worker's fresh position to the job; none when unknown
    completed_jobs: int
    released: int  # jobs the worker held and gave back
    vanished: int  # jobs whose lease ran out on the worker
    busy: bool  # holds another job now: cannot be assigned until it is done
    qualified: bool  # has every skill and the rating the job asks for, now
    assigned: bool  # holds this job: the business's (or the auto-pick's) choice


class Applicants(Resource):
    """GET /jobs/{job_id}/applications: current applicants, earliest first."""

    applications: list[Applicant]

    def document(self) -> dict[str, Any]:
        return {"applications": [a.document() for a in self.applications]}


class ApplicationEventType(StrEnum):
    """Application events change nothing on the job (no version of their own): they carry the
    job's version at the time, as the offer round's events do."""

    CREATED = "application.created"
    WITHDRAWN = "application.withdrawn"


class ApplicationChanged(Event):
    """A worker applied for a job, or withdrew; `data` is the application."""

    type: ApplicationEventType
    data: Application  # type: ignore[assignment]


BACK_TO_CHOICE = "job.back_to_choice"


class BackToChoiceData(Model):
    """`job.back_to_choice`: the worker the business chose gave the job back or vanished."""

    worker_id: str  # who left (their application ended with it)
    reason: Literal["released", "vanished"]  # gave it back, or let the lease run out
    applicants: int  # the applicants that remain to choose from
    choose_by: datetime | None  # the deadline now (none: the business set no deadline)


class BackToChoice(Event):
    """A business_choice job went back to its business's choice (the job's own event,
    `job.released` or `job.reopened`, has the same version)."""

    type: Literal["job.back_to_choice"]
    data: BackToChoiceData  # type: ignore[assignment]


# The events of the business's choice and the model of each (the AsyncAPI document's).
APPLICATION_EVENT_MODELS: dict[str, type[Event]] = {
    **{kind.value: ApplicationChanged for kind in ApplicationEventType},
    BACK_TO_CHOICE: BackToChoice,
}
