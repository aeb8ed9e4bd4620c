"""The evaluation's arithmetic without a run: the Gini coefficient of work per worker, and the
bill at the price table's list prices."""

import json
from pathlib import Path

import pytest

from sim.costs import bill, per_thousand_filled, prices, without_proxy
from sim.run import gini


def test_gini_is_zero_for_equal_work_and_near_one_when_one_does_all() -> None:
    assert gini([2.0, 2.0, 2.0, 2.0]) == 0
    assert gini([0.0, 0.0, 0.0, 4.0]) == pytest.approx(0.75)  # (n - 1) / n for one of n
    assert gini([1.0, 2.0, 3.0, 4.0]) == pytest.approx(0.25)
    assert gini([]) is None and gini([0.0, 0.0]) is None


KPIS = {
    "jobs": 100,
    "fill_rate": 0.5,
    "aws": {
        "invocations": {"PUT /workers/me/location": 1_000_000, "OfferQueue": 10_000,
                        "OutboxQueue": 0, "LeaseSweeper": 60, "OutboxRelay": 1800},
        "handler_seconds": {"PUT /workers/me/location": 2000.0, "LeaseSweeper": 6.0},
        "sqs_sent": {"dispatch-sim-offers": 10_000, "dispatch-sim-outbox.fifo": 0},
        "sqs_receives": 10_000,
        "events_put": 50_000,
    },
}  # fmt: skip


def test_the_bill_counts_each_item_at_its_list_price() -> None:
    p = prices()
    items = bill(KPIS, hours=1.0, p=p)
    assert items["API Gateway requests"] == pytest.approx(1.00)  # a million at $1 per million
    # A million API requests, 10,000 batches, two schedules a minute for an hour.
    assert items["Lambda requests"] == pytest.approx((1_000_000 + 10_000 + 120) * 0.20 / 1e6)
    billed = 2000 + 6 + 60 * 55 + (1_000_000 + 10_000 + 60 + 1800) * 0.0005
    assert items["Lambda GB-seconds"] == pytest.approx(billed * 0.5 * 0.0000133334)
    assert items["SQS requests"] == pytest.approx((10_000 * 0.40 + 20_000 * 0.50) / 1e6)
    assert items["EventBridge events"] == pytest.approx(0.05)
    assert items["Aurora writer and proxy"] == pytest.approx(0.12 + 8 * 0.015)
    assert without_proxy(p)["aurora"]["proxy_min_acu"] == 0
    per = per_thousand_filled(KPIS, 1.0)
    assert per["total"] == pytest.approx(sum(items.values()) * 1000 / 50)


def test_mcnemar_is_even_odds_on_the_jobs_only_one_policy_filled() -> None:
    from sim.evaluate import mcnemar_exact

    assert mcnemar_exact(0, 0) == 1.0 and mcnemar_exact(1, 0) == 1.0  # one job says nothing
    assert mcnemar_exact(2, 1) == pytest.approx(1.0)  # 2 x P(X <= 1 of 3) = 2 x 0.5
    assert mcnemar_exact(8, 0) == pytest.approx(2 / 256)  # eight to none: hardly chance
    assert mcnemar_exact(5, 1) == mcnemar_exact(1, 5) == pytest.approx(2 * 7 / 64)


def test_the_fill_is_paired_job_by_job_and_waits_read_from_the_replay(tmp_path: Path) -> None:
    from sim.evaluate import paired_fill, waits

    def replay(name: str, assigned: dict[str, float]) -> Path:
        events: list[dict[str, str | float]] = [{"type": "replay"}]
        events += [{"t": 10.0 * n, "type": "job.created", "job_id": job}
                   for n, job in enumerate("abcd")]  # fmt: skip
        events += [{"t": t, "type": "job.assigned", "job_id": job} for job, t in assigned.items()]
        path = tmp_path / name
        path.write_text("\n".join(json.dumps(e) for e in events))
        return path

    # The same four jobs in the same order (other ids in each run would pair the same way).
    nearest = replay("n.jsonl", {"a": 5.0, "b": 30.0, "c": 40.0})
    likely = replay("l.jsonl", {"a": 3.0, "c": 22.0, "d": 31.0, "b": 90.0})
    assert sorted(waits(nearest)) == [5.0, 20.0, 20.0]
    assert sorted(waits(likely)) == [1.0, 2.0, 3.0, 80.0]  # b's first accept: 90 - 10
    assert paired_fill(nearest, likely) == {
        "jobs": 4,
        "only_nearest": 0,
        "only_likely": 1,
        "p": 1.0,
    }
