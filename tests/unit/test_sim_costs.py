"""The evaluation's arithmetic without a run: the Gini coefficient of work per worker, and the
bill at the price table's list prices (by interval, and by the rule's position path)."""

import copy
import json
from pathlib import Path
from typing import Any

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
    # Reported by interval (no stream, as before it): the position path costs nothing.
    assert items["WebSocket messages"] == items["Kinesis"] == 0
    assert items["cache"] == pytest.approx(0.1 * 0.084 + (3 * 1_000_000 + 40_000) * 0.0023e-6)
    assert without_proxy(p)["aurora"]["proxy_min_acu"] == 0
    per = per_thousand_filled(KPIS, 1.0)
    assert per["total"] == pytest.approx(sum(items.values()) * 1000 / 50)


# The same city by the rule: 40,000 position messages on the sockets (two refused by the
# route's model, ten skipped by the consumer as too old), 2,500 pulls that carried the
# position, the stream's busiest second 1,500 puts (two shards).
RULE_KPIS: dict[str, Any] = {
    "jobs": 100,
    "fill_rate": 0.5,
    "aws": {
        "invocations": {"GET /workers/me/offers": 2_500, "PositionStream": 3_000,
                        "OfferQueue": 10_000, "OutboxQueue": 0},
        "handler_seconds": {"GET /workers/me/offers": 10.0, "PositionStream": 30.0},
        "sqs_sent": {"dispatch-sim-offers": 10_000, "dispatch-sim-outbox.fifo": 0},
        "sqs_receives": 10_000,
        "events_put": 50_000,
        "positions": {"socket_messages": 40_000, "stream_puts": 39_998, "stream_refused": 2,
                      "stream_skipped": 10, "peak_puts_per_second": 1_500,
                      "reads_with_position": 2_500},
    },
}  # fmt: skip


def test_the_bill_counts_the_position_path_by_message_put_and_batch() -> None:
    items = bill(RULE_KPIS, hours=2.0)
    assert items["API Gateway requests"] == pytest.approx(2_500 / 1e6)  # the pulls alone
    assert items["WebSocket messages"] == pytest.approx(40_000 * 1.00 / 1e6)
    # Two shards for two hours, a PUT payload unit per record put.
    assert items["Kinesis"] == pytest.approx(2 * 2 * 0.015 + 39_998 * 0.014 / 1e6)
    # The stream's batches are Lambda requests and duration, not API requests.
    schedules = 2 * 60 * 2
    assert items["Lambda requests"] == pytest.approx((2_500 + 10_000 + 3_000 + schedules) * 0.2e-6)
    billed = 10 + 30 + 2 * 60 * 55 + (2_500 + 3_000 + 10_000) * 0.0005
    assert items["Lambda GB-seconds"] == pytest.approx(billed * 0.5 * 0.0000133334)
    # Positions written: the records the consumer wrote and the pulls that carried one.
    ecpu = 3 * (39_998 - 10 + 2_500) + 4 * 10_000
    assert items["cache"] == pytest.approx(2 * 0.1 * 0.084 + ecpu * 0.0023 / 1e6)
    # One shard at the least, however quiet the stream.
    quiet = copy.deepcopy(RULE_KPIS)
    quiet["aws"]["positions"]["peak_puts_per_second"] = 3
    assert bill(quiet, hours=1.0)["Kinesis"] == pytest.approx(0.015 + 39_998 * 0.014 / 1e6)


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


def test_the_default_is_decided_by_the_rule_fixed_before_the_runs() -> None:
    """Issue 38's rule, per city with every seed's jobs pooled: fill within half a point (and
    McNemar not against it), p90 at most 0.8x, offers per filled job not higher; `likely`
    becomes the default only when every city meets all three."""
    from sim.evaluate import decide, decision

    nearest = {"fill_rate": 0.890, "p90": 50.0, "offers_per_filled_job": 3.9}
    even = {"nearest": 3, "likely": 3}

    def likely(**change: float) -> dict[str, float]:
        return {"fill_rate": 0.886, "p90": 40.0, "offers_per_filled_job": 3.9} | change

    assert decide(nearest, likely(), even) == {"fill": True, "p90": True, "offers": True}
    assert not decide(nearest, likely(fill_rate=0.8849), even)["fill"]  # more than half a point
    assert not decide(nearest, likely(), {"nearest": 9, "likely": 0})["fill"]  # p 0.004
    assert decide(nearest, likely(), {"nearest": 5, "likely": 1})["fill"]  # p 0.22: chance
    assert not decide(nearest, likely(p90=40.1), even)["p90"]
    assert not decide(nearest, likely(offers_per_filled_job=3.91), even)["offers"]

    met = {"fill": True, "p90": True, "offers": True}
    assert decision({"district": met, "district_cold": met}) == (
        "decision: likely becomes the default (it meets the rule in all 2 cities)"
    )
    assert decision({"district": met, "evening_cold": met | {"offers": False}}) == (
        "decision: nearest stays the default (likely misses: evening_cold offers)"
    )
    assert decision({}).startswith("decision: nearest stays")


def test_the_evaluation_writes_its_tables_into_the_docs_in_place(tmp_path: Path) -> None:
    from sim.evaluate import DOCS_HEADING, write_docs

    docs = tmp_path / "simulation.md"
    docs.write_text(f"# City\n\n## Policy\n\n{DOCS_HEADING}\n\nold table\n\n### After\n\nkept\n")
    write_docs("| a | b |\n\ndecision: nearest stays the default (x)\n", [102, 103], docs)
    assert docs.read_text() == (
        f"# City\n\n## Policy\n\n{DOCS_HEADING}\n\nSeeds 102, 103; from"
        " `sim/runs/eval/evaluation.md`.\n\n| a | b |\n\ndecision: nearest stays the default"
        " (x)\n\n### After\n\nkept\n"
    )
    write_docs("| c |\n", [104], docs)  # again: replaced, not added
    assert docs.read_text().count(DOCS_HEADING) == 1 and "| a | b |" not in docs.read_text()
    fresh = tmp_path / "fresh.md"
    fresh.write_text("# City\n")
    write_docs("| c |\n", [104], fresh)
    assert fresh.read_text().startswith(f"# City\n{DOCS_HEADING}\n")
