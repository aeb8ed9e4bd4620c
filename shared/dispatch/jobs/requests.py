"""What the job commands take in: the request bodies, validated. Input rules (a window that ends
in the future, coordinates in range) live here only; the answers (dispatch.jobs.models) check
types, never input rules. Apart from the answers, so that a function that only reads jobs
(job queries, ops, offers, applications) builds none of these models at cold start."""

from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, AwareDatetime, Field, model_validator

from dispatch.fields import GEO_MAX_LAT, Skills
from dispatch.jobs.models import Assignment, TransitionEvent
from dispatch.models import WHOLE, ApiId, Strict, WholeNumber


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
