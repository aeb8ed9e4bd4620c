"""The round model (sim/wave_model.py) that docs/simulation.md quotes: it runs the product's own
`likely` choice, and says what the city runs found (no record: no faster than `nearest`) and
what a deeper record would change (faster with fewer offers)."""

from sim.wave_model import measure, one_round

JOBS = 500


def test_nearest_offers_the_seeds_waves() -> None:
    r = measure("nearest", jobs=JOBS, history=0, target=0.8)
    assert r.fill > 0.99
    assert 3 <= r.offers < 4  # the first wave's three, now and then the second's ten


def test_without_a_record_likely_is_not_faster() -> None:
    base = measure("nearest", jobs=JOBS, history=0, target=0.8)
    cold = measure("likely", jobs=JOBS, history=0, target=0.8)
    assert cold.p90 > 0.9 * base.p90


def test_a_deep_record_makes_likely_faster_with_fewer_offers_and_races() -> None:
    base = measure("nearest", jobs=JOBS, history=0, target=0.8)
    warm = measure("likely", jobs=JOBS, history=12, target=0.9)
    assert warm.p90 <= 0.8 * base.p90
    assert warm.offers < base.offers
    assert warm.lost_races < base.lost_races


def test_a_round_counts_what_it_offered() -> None:
    import random

    from dispatch.offers.policy import Knobs
    from sim.scenario import AcceptCurve

    curve = AcceptCurve(top=0.85, midpoint_m=2500, width_m=700)
    knobs = Knobs(interval_s=60, history_s=7200)
    rng = random.Random(7)
    for _ in range(50):
        seconds, offered, lost = one_round(rng, "nearest", knobs, 2500, 0, curve)
        assert offered in (3, 13, 24)
        assert seconds is None or seconds > 0
        assert lost >= 0
