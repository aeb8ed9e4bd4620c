"""The events: one envelope for every event on the bus and in a job's history, and the
payload each type carries. The AsyncAPI document (`dispatch asyncapi`, `/asyncapi.json`) is
generated from these models, as the OpenAPI document is from the routes'."""

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from dispatch.jobs.models import Job, JobEventType
from dispatch.models import Document, Resource
from dispatch.offers.models import JobUnfilledData, OfferCreatedData, OfferEventType


class Event(Document):
    """Any event, as `dispatch_event` writes it (the relay's message, the bus's detail)."""

    id: UUID
    job_id: UUID
    type: str
    version: int
    actor: str
    occurred_at: datetime
    data: dict[str, Any]


class JobChanged(Event):
    """A change of the job: `data` is the public Job at `version`, exactly as GET shows it."""

    type: JobEventType
    data: Job  # type: ignore[assignment]


class OfferCreated(Event):
    """A worker was offered the job; `version` is the job's version that opened the round."""

    type: Literal[OfferEventType.CREATED]
    data: OfferCreatedData  # type: ignore[assignment]


class JobUnfilled(Event):
    """Every wave passed and nobody took the job in that round."""

    type: Literal[OfferEventType.UNFILLED]
    data: JobUnfilledData  # type: ignore[assignment]


# Each event type and the model that describes it.
EVENT_MODELS: dict[str, type[Event]] = {
    **{kind.value: JobChanged for kind in JobEventType},
    OfferEventType.CREATED.value: OfferCreated,
    OfferEventType.UNFILLED.value: JobUnfilled,
}


class JobEvents(Resource):
    events: list[JobChanged]

    def document(self) -> dict[str, Any]:
        return {"events": [event.document() for event in self.events]}
