"""A short soak against the local stack, so it never rots: the checker must find nothing and
no request may end in a 5xx. No timing is asserted here."""

from bench import soak


def test_a_short_soak_is_clean(bench_url: str) -> None:
    result = soak.soak(bench_url, seconds=6, businesses=2, workers=6)
    assert result.server_errors == 0, soak.report(result)
    assert result.violations == [], soak.report(result)
    assert result.routes["accept"].ok > 0 and result.routes["create"].ok > 0
    text = soak.report(result)
    assert "| accept |" in text
    # The run in stretches: every one served something, and the outbox was watched.
    assert result.windows and all(w.per_second > 0 for w in result.windows), text
    assert result.windows[0].read_p50_ms is not None, text
    assert text.splitlines()[-1].startswith("last window served "), text
