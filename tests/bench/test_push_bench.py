"""A short run of the push benchmark, so it never rots: phones connected over real sockets,
every offer the database made heard on the phone it names, the baseline replayed, the report
rendered. No timing is asserted here."""

from bench import push


def test_every_offer_made_is_heard_on_its_phone_and_the_report_renders(bench_url: str) -> None:
    result = push.run(bench_url, clients=40, seconds=4, speed=12)
    assert result.jobs > 0 and result.offers_made > 0
    assert result.offers_heard == result.offers_made
    assert result.bare.messages == result.ours.messages  # the same messages, replayed
    text = push.report(result)
    assert "| bare websockets broadcast | 40 |" in text
    assert text.splitlines()[-1].startswith("commit to device p50 ")
