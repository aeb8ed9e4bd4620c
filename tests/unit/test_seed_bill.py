"""make cost's arithmetic without a run (sim/seed_bill.py): tiers, the seed's month from a
run's measures, and the line it ends with."""

import pytest

from sim.costs import prices
from sim.seed_bill import SEED, month, rates, report, tiered


def run(design: str) -> dict[str, object]:
    """A run's kpis as sim/run.py writes them: 100 jobs, 1,000 worker-hours, 500 workers."""
    positions = 120_000 if design == "today" else 0
    return {
        "jobs": 100,
        "fill_rate": 0.8,
        "workers_online": 500,
        "worker_online_hours": 1_000.0,
        "aws": {
            "invocations": {
                "PUT /workers/me/location": positions,
                "GET /workers/me/offers": 10_000,
                "PUT /workers/me": 500,
                "POST /jobs": 100,
                "OfferQueue": 300,
                "LeaseSweeper": 60,
                **({} if design == "today" else {"PositionStream": 1_000}),
            },
            "handler_seconds": {
                "PUT /workers/me/location": positions * 0.002,
                "GET /workers/me/offers": 30.0,
                "POST /jobs": 0.5,
            },
            "answer_bytes": {"GET /workers/me/offers": 1_000_000, "POST /jobs": 50_000},
            "sqs_sent": {"offers": 300, "outbox.fifo": 1_000},
            "sqs_receives": 200,
            "events_put": 1_000,
            "positions": {
                "socket_messages": 0 if design == "today" else 12_000,
                "stream_puts": 0 if design == "today" else 12_000,
            },
            "postgres_cpu_seconds": 20.0,
            "redis_commands": 400_000,
            "redis_bytes": 40_000_000,
        },
    }


def test_tiers_price_each_part_at_its_own_rate() -> None:
    tiers = [(300e6, 1.00), (float("inf"), 0.90)]
    assert tiered(100e6, tiers) == pytest.approx(100)
    assert tiered(400e6, tiers) == pytest.approx(300 + 90)


def test_the_seeds_month_scales_jobs_and_worker_hours_apart() -> None:
    today = rates(run("today"))
    assert today.per_worker_hour["PUT /workers/me/location"] == 120  # every 30 s
    assert today.per_job["POST /jobs"] == 1 and "PUT /workers/me" not in today.per_job
    assert today.per_worker_shift["PUT /workers/me"] == 1
    lines = {line.item: line for line in month(today, "today", prices())}
    worker_hours = SEED["workers_online"] * SEED["hours_a_day"] * SEED["days"]
    http = (
        120 * worker_hours
        + 10 * worker_hours
        + SEED["workers_online"] * SEED["days"]
        + (SEED["jobs_a_day"] * SEED["days"])
    )
    assert lines["HTTP API requests"].quantity == f"{http / 1e6:,.0f} M"
    assert lines["Kinesis (position stream)"].dollars == 0  # today's path has no stream
    new = {line.item: line for line in month(rates(run("new")), "new", prices())}
    assert new["Kinesis (position stream)"].dollars > 0
    assert new["HTTP API requests"].dollars < lines["HTTP API requests"].dollars


def test_it_ends_with_the_seeds_month_then_and_now() -> None:
    text = report({"today": run("today"), "new": run("new")}, prices())
    last = text.splitlines()[-1]
    assert last.startswith("seed's load per month: $") and "(was $" in last
