"""The offer rounds' vocabulary: the wave message on the offer queue, and what offer events
carry."""

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel

from dispatch.events import Event
from dispatch.jobs.models import JobSummary
from dispatch.models import Document, Resource, Strict


class OfferEventType(StrEnum):
    """Events of an offer round: they change nothing on the job (no version of their own)."""

    CREATED = "offer.created"
    UNFILLED = "job.unfilled"


class WaveRequest(BaseModel):
    """The offer queue's message: wave `wave` (from 1) of the round opened at `version`."""

    job_id: UUID
    version: int
    wave: int

    def next(self) -> "WaveRequest":
        return self.model_copy(update={"wave": self.wave + 1})


class OfferCreatedData(BaseModel):
    """`offer.created`: one worker was offered the job in a wave."""

    worker_id: str
    distance_m: float
    wave: int
    radius_m: int
    job: JobSummary


class JobUnfilledData(BaseModel):
    """`job.unfilled`: every wave of the round passed and the job is still open."""

    waves: int
    offered: int


class Offer(Document):
    """An offer the caller holds, as `offer.created` carried it (`OFFERS_OF_WORKER`)."""

    job: JobSummary
    distance_m: float
    wave: int
    offered_at: datetime


class Offers(Resource):
    offers: list[Offer]

    def document(self) -> dict[str, Any]:
        return {"offers": [offer.document() for offer in self.offers]}


class DeclineJob(Strict):
    """The body of a decline: nothing (an empty body means {}); anything else is refused."""


class Declined(Resource):
    job_id: UUID
    declined: Literal[True] = True


# -- events -----------------------------------------------------------------------------------


class OfferCreated(Event):
    """A worker was offered the job; `version` is the job's version that opened the round."""

    type: Literal[OfferEventType.CREATED]
    data: OfferCreatedData  # type: ignore[assignment]


class JobUnfilled(Event):
    """Every wave passed and nobody took the job in that round."""

    type: Literal[OfferEventType.UNFILLED]
    data: JobUnfilledData  # type: ignore[assignment]


# Each offer event type and the model that describes it (the AsyncAPI document's offer messages).
OFFER_EVENT_MODELS: dict[str, type[Event]] = {
    OfferEventType.CREATED.value: OfferCreated,
    OfferEventType.UNFILLED.value: JobUnfilled,
}
