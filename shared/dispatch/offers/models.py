"""The offer rounds' vocabulary: the wave message on the offer queue, and what offer events
carry."""

from enum import StrEnum
from uuid import UUID

from pydantic import BaseModel

from dispatch.jobs.models import JobSummary


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
