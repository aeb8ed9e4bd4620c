"""The offer rounds' vocabulary: the wave message on the offer queue, and what offer events
carry."""

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from dispatch.events import Event
from dispatch.jobs.models import JobSummary
from dispatch.models import Document, Model, Resource, Strict


class OfferEventType(StrEnum):
    """Events of an offer round: they change nothing on the job (no version of their own)."""

    CREATED = "offer.created"
    UNFILLED = "job.unfilled"


class WaveRequest(Model):
    """The offer queue's message: wave `wave` (from 1) of the round opened at `version`."""

    job_id: UUID
    version: int
    wave: int

    def next(self) -> "WaveRequest":
        return self.model_copy(update={"wave": self.wave + 1})


class OfferReason(Model):
    """Why this worker was offered the job: the inputs that ranked them (the offer policy's,
    `DISPATCH_OFFER_POLICY`). `nearest` ranks by distance (100 m bands), then rating: it fills
    those and the rank. `likely` (dispatch.offers.policy) adds the worker's recent record as
    Dispatch holds it, the chance of a yes before the next wave, the score it ranked by, and
    the market's curve it read them with."""

    policy: str  # nearest | likely
    rank: int  # 1 = offered first in its wave
    supply: int | None = None  # qualified workers the policy ranked
    distance_m: float
    rating: float | None = None  # the worker's, when the wave ran
    min_rating: float | None = None  # the job's
    offers: int | None = None  # of their recent offers, answered or gone silent
    accepts: int | None = None
    declines: int | None = None
    silences: int | None = None
    releases: int | None = None
    leases_run_out: int | None = None
    answer_s: float | None = None  # their mean seconds from offer to answer
    idle_s: int | None = None  # seconds since their last accept (capped at the history)
    round_declines: int | None = None  # declines of this job already in this round
    chance: float | None = None  # of a yes before the next wave
    soon: float | None = None  # of a yes within the horizon
    score: float | None = None
    # the market's curve the chances were read with (dispatch.offers.market): a yes at the
    # door, and the distance at which it halves
    market_door: float | None = None
    half_distance_m: float | None = None
    # issue 38: the accepts that lost the race (counted in `accepts`: a yes), since their last
    # offer of any job (null: none on record), offered nothing for the floor's period (counted
    # more), and whether the market's curve stood (false: the configured one, a cold market)
    lost_races: int | None = None
    since_offer_s: int | None = None
    left_out: bool | None = None
    market_stands: bool | None = None
    # the floor's seat chose them: left out longest, offered beside the likeliest
    seat: bool | None = None


class OfferCreatedData(Model):
    """`offer.created`: one worker was offered the job in a wave, and why."""

    worker_id: str
    distance_m: float
    wave: int
    radius_m: int
    job: JobSummary
    why: OfferReason | None = None  # null only on offers made before reasons were recorded


class JobUnfilledData(Model):
    """`job.unfilled`: every wave of the round passed and the job is still open; or, for a
    business_choice job, its deadline to choose passed (`reason`) with nobody assigned."""

    waves: int
    offered: int
    # null: the offer waves passed (first come); a choice job's deadline: why nobody was assigned
    reason: Literal["no_applicants", "not_chosen"] | None = None
    applicants: int | None = None  # a choice job's current applicants at its deadline


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
