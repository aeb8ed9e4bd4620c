"""Offers in waves (dispatch.offers): where the rounds are queued, the waves, and which policy
picks a wave's workers (its knobs: dispatch.config.offer_policy)."""

from typing import Annotated, Literal, NamedTuple

from pydantic import AfterValidator, BeforeValidator, Field

from dispatch.config import Group, settings


class Wave(NamedTuple):
    """One wave of offers: up to `size` workers within `radius_m` of the job."""

    size: int
    radius_m: int


def _waves(value: object) -> object:
    """`DISPATCH_OFFER_WAVES=3@3000,10@5000,25@8000`: size@radius_m, in order."""
    if not isinstance(value, str):
        return value
    waves = []
    for item in value.split(","):
        size, _, radius = item.strip().partition("@")
        waves.append(Wave(int(size), int(radius)))
    return waves


# A wave reads every cell of the map its radius touches (dispatch.workers.locations).
MAX_WAVE_RADIUS_M = 50_000


def _positive_waves(waves: list[Wave]) -> list[Wave]:
    if not waves or any(w.size <= 0 or w.radius_m <= 0 for w in waves):
        raise ValueError("offer waves need a positive size and radius each, and at least one")
    if any(w.radius_m > MAX_WAVE_RADIUS_M for w in waves):
        raise ValueError(f"an offer wave's radius is at most {MAX_WAVE_RADIUS_M} m")
    return waves


Waves = Annotated[list[Wave], BeforeValidator(_waves), AfterValidator(_positive_waves)]


class OfferSettings(Group):
    """Read with `offer_settings()`."""

    # Offers in waves. No queue URL: no offers are made (publishing is unaffected).
    offer_queue_url: str | None = Field(None, validation_alias="OFFER_QUEUE_URL")
    offer_waves: Waves = Field(
        [Wave(3, 3000), Wave(10, 5000), Wave(25, 8000)], validation_alias="DISPATCH_OFFER_WAVES"
    )
    # The gap between waves (an SQS message delay, so at most 900 s).
    offer_wave_interval_seconds: int = Field(
        60, ge=0, le=900, validation_alias="DISPATCH_OFFER_WAVE_INTERVAL_SECONDS"
    )
    # When everyone offered in a wave has declined, send the next wave at once.
    offer_next_wave_on_declines: bool = Field(
        True, validation_alias="DISPATCH_OFFER_NEXT_WAVE_ON_DECLINES"
    )
    # Nearest positions read per wave before the database filters (skills, busy, offered).
    offer_candidate_limit: int = Field(500, gt=0, validation_alias="DISPATCH_OFFER_CANDIDATE_LIMIT")
    # Who a wave offers to (dispatch.offers.policy): `nearest` (the seed's: nearest first,
    # rating breaking ties, the wave's size) or `likely` (the workers most likely to take the
    # job within one interval, from what they did with their recent offers; the round sized
    # to the supply). The `likely` policy's knobs follow (docs/simulation.md, "Offer policy").
    offer_policy: Literal["nearest", "likely"] = Field(
        "nearest", validation_alias="DISPATCH_OFFER_POLICY"
    )
    # How many waves ahead a `likely` wave may reach: its workers are found within that later
    # wave's radius (0: the wave's own), so a job with nobody near is offered at once to whoever
    # is farther instead of waiting an interval for the next wave; the score still ranks the
    # near ones first.
    offer_reach_waves: int = Field(1, ge=0, validation_alias="DISPATCH_OFFER_REACH_WAVES")


def offer_settings() -> OfferSettings:
    return settings.of(OfferSettings)
