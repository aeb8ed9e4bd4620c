"""The `likely` offer policy's knobs (dispatch.offers.policy and .market; docs/simulation.md,
"Offer policy"): read by the wave consumer and the sweeper, never by an API route."""

from pydantic import Field

from dispatch.config import Group, settings


class OfferPolicySettings(Group):
    """Read with `offer_policy_settings()`."""

    # How long a worker's and the market's answers count: the time constant of their decay (an
    # answer a day old weighs 0.37), so that a worker's habits survive the night (two hours
    # held about one answer a worker in the simulated district); and how many offers a worker's
    # record weighs at most against the prior (more answers are scaled down to 12). The answers
    # are folded once by the sweeper (dispatch.offers.market.fold), not recounted.
    offer_history_seconds: int = Field(
        86400, gt=0, validation_alias="DISPATCH_OFFER_HISTORY_SECONDS"
    )
    offer_history_offers: int = Field(12, gt=0, validation_alias="DISPATCH_OFFER_HISTORY_OFFERS")
    # The nearest qualified workers the policy ranks (the rest are too far to matter).
    offer_pool: int = Field(24, gt=0, validation_alias="DISPATCH_OFFER_POOL")
    # The chance that someone says yes within the horizon that a wave aims for; the horizon
    # is how soon a business should hear (shorter than the interval: fast answerers count).
    offer_target: float = Field(0.9, gt=0, lt=1, validation_alias="DISPATCH_OFFER_TARGET")
    offer_horizon_seconds: int = Field(20, gt=0, validation_alias="DISPATCH_OFFER_HORIZON_SECONDS")
    # A worker with no history: this chance of accepting a job at their door (until the
    # market's curve stands: then the market's own).
    offer_prior_accept: float = Field(
        0.6, gt=0, le=1, validation_alias="DISPATCH_OFFER_PRIOR_ACCEPT"
    )
    # How many offers' worth of that prior a worker's own record must outweigh.
    offer_prior_weight: float = Field(3.0, gt=0, validation_alias="DISPATCH_OFFER_PRIOR_WEIGHT")
    # The distance at which the policy expects half as many yeses as at the door (until the
    # market's curve stands: then the market's own).
    offer_half_distance_m: int = Field(
        2500, gt=0, validation_alias="DISPATCH_OFFER_HALF_DISTANCE_M"
    )
    # Each decline the job already had in this round lowers everyone's chance by this factor
    # (a job others turned down is harder to place: the wave widens).
    offer_decline_discount: float = Field(
        0.85, gt=0, le=1, validation_alias="DISPATCH_OFFER_DECLINE_DISCOUNT"
    )
    # Spread work: a worker idle for the whole history window counts this much more.
    offer_idle_weight: float = Field(0.2, ge=0, validation_alias="DISPATCH_OFFER_IDLE_WEIGHT")
    # A wave offers at least this many and at most the larger of this and the wave's size.
    offer_min_size: int = Field(1, gt=0, validation_alias="DISPATCH_OFFER_MIN_SIZE")
    offer_max_size: int = Field(4, gt=0, validation_alias="DISPATCH_OFFER_MAX_SIZE")
    # The market's curve (dispatch.offers.market): the sweeper fits it to the market's folded
    # answers (decayed with the history above) every `refit` seconds; the policy reads it once
    # it stands on `min_answers` answers (fewer: the prior and the half distance above stand).
    offer_market_refit_seconds: int = Field(
        600, gt=0, validation_alias="DISPATCH_OFFER_MARKET_REFIT_SECONDS"
    )
    offer_market_min_answers: int = Field(
        200, gt=0, validation_alias="DISPATCH_OFFER_MARKET_MIN_ANSWERS"
    )
    # Fairness with a floor: a qualified worker offered nothing for `floor` seconds (or ever)
    # counts this much more (0.5: one and a half times), so that the best records do not take
    # every offer of a shift while others within reach wait unasked; once offered, they count
    # as everyone does.
    offer_floor_seconds: int = Field(1800, gt=0, validation_alias="DISPATCH_OFFER_FLOOR_SECONDS")
    offer_floor_weight: float = Field(0.5, ge=0, validation_alias="DISPATCH_OFFER_FLOOR_WEIGHT")
    # The floor's seats: beside a wave's likeliest, this many of the candidates left out longest
    # (as above; never offered first) are offered too, within the wave's size. An offer added,
    # never one taken away. Weight and seat together were measured against each alone and
    # against two seats (docs/simulation.md, issue 38).
    offer_floor_seats: int = Field(1, ge=0, validation_alias="DISPATCH_OFFER_FLOOR_SEATS")
    # A rating one star above what the job asks (or above 4.0, a new worker's) counts this much
    # more.
    offer_rating_weight: float = Field(0.05, ge=0, validation_alias="DISPATCH_OFFER_RATING_WEIGHT")


def offer_policy_settings() -> OfferPolicySettings:
    return settings.of(OfferPolicySettings)
