"""A tiny run of the offer policy benchmark, so it never rots. No timing is asserted here."""

from bench import offers


def test_both_policies_run_their_waves_on_the_same_market(bench_url: str, redis_url: str) -> None:
    result = offers.run(bench_url, workers=60, jobs=4)
    assert result.history_offers > 0
    assert {p: t.count for p, t in result.per_policy.items()} == {"nearest": 8, "likely": 8}
    assert result.offers_per_wave["nearest"] > 0 and result.offers_per_wave["likely"] > 0
    assert result.market_answers > 0  # the waves read a fitted market's curve
    assert "likely / nearest per wave" in offers.report(result)
