"""The market's curve (dispatch.offers.market), fit without any service: it finds the curve the
answers came from, keeps the configured shape where the answers cannot tell one, and fits
nothing from answers that hold no yes."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dispatch.offers.market import HALVES_M, Band, fit, near


def answered(door: float, half_m: float, per_band: int, seed: int = 7) -> list[Band]:
    """Offers at every 250 m band out to 9 km, each said yes to with the curve's chance."""
    rng = random.Random(seed)
    bands = []
    for k in range(36):
        middle = (k + 0.5) * 250
        chance = door * near(middle, half_m)
        bands.append(Band(middle, per_band, sum(rng.random() < chance for _ in range(per_band))))
    return bands


@pytest.mark.parametrize(("door", "half_m"), [(0.8, 2500), (0.9, 4000), (0.6, 1200)])
def test_it_finds_the_curve_the_answers_came_from(door: float, half_m: float) -> None:
    curve = fit(answered(door, half_m, per_band=400), configured_half_m=2500)
    assert curve is not None and curve.answers == 36 * 400
    assert abs(curve.half_distance_m / half_m - 1) < 0.1, curve
    assert abs(curve.door - door) < 0.05, curve


def test_a_city_whose_workers_drive_further_moves_the_half_distance_out() -> None:
    """The thin evening's shape: about 4 km where the configured curve says 2.5 km, from a
    day of a few hundred answers within 3 km (where the two curves already differ)."""
    near_only = [b for b in answered(0.85, 4000, per_band=25, seed=3) if b.distance_m < 3000]
    curve = fit(near_only, configured_half_m=2500)
    assert curve is not None and curve.answers == 12 * 25
    assert curve.half_distance_m > 3200, curve


def test_answers_all_at_one_distance_leave_the_configured_shape() -> None:
    """At one distance every half distance explains the answers with some door: the prior
    (the configured half distance) decides, and the door matches the answers there."""
    curve = fit([Band(1000, 200, 150)], configured_half_m=2500)
    assert curve is not None
    assert min(HALVES_M, key=lambda h: abs(h - 2500)) == curve.half_distance_m
    assert abs(curve.door * near(1000, curve.half_distance_m) - 150 / 200) < 1e-9


def test_no_yes_fits_nothing() -> None:
    assert fit([], configured_half_m=2500) is None
    assert fit([Band(500, 40, 0)], configured_half_m=2500) is None


@given(
    st.lists(
        st.tuples(st.floats(0, 20000), st.integers(1, 500), st.floats(0, 1)),
        min_size=1,
        max_size=40,
    )
)
def test_any_answers_give_a_chance_and_a_distance_the_database_accepts(
    raw: list[tuple[float, int, float]],
) -> None:
    bands = [Band(d, n, round(n * share)) for d, n, share in raw]
    curve = fit(bands, configured_half_m=2500)
    if not any(b.accepts for b in bands):
        assert curve is None
        return
    assert curve is not None
    assert 0 < curve.door <= 1  # offer_market_door_is_a_chance
    assert curve.half_distance_m in HALVES_M
