"""Offer policy benchmark: what a wave costs per job, `likely` against the seed's `nearest`.

    make bench-offers            (or: python -m bench.offers [--workers 2000] [--jobs 150])

A market like the district's rush: `--workers` workers with fresh positions in Redis around
the centre (a Gaussian, sd 2.5 km), each with a record of about twenty recent offers (an
accept, declines and silence per past job, a few leases that ran out), as the product writes
them. Then, for each of `--jobs` places, a new job is posted for each policy in turn and its
first two waves run (`waves.run_wave`: the positions from Redis, the choice, the offers and
their events written and relayed after the commit, when an outbox queue is configured): the
wave's whole cost, which is what a job pays.
The figure is the mean and p50 per job of `likely` over `nearest`, measured in the same run
on the same data, interleaved (the issue asks at most 1.5x). Before the waves, the sweeper's
fit of the market's curve runs once on that record (timed: it is the sweeper's cost every ten
minutes, not a wave's), so that `likely` waves read a fitted curve as they do in production.
"""

import argparse
import json
import os
import random
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.common import Timing, bench_database, bench_redis, timing

RESULTS = Path(__file__).parent / "results"
CENTRE = (12.9716, 77.5946)
POLICIES = ("nearest", "likely")

# Past jobs (far away, still open: only their offers and events matter), each offered to ten
# random workers an hour or two ago: the first took it (a tenth lost the lease later), four
# declined, five stayed silent. The events carry the job's document, as the product's do.
HISTORY = [
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-past', 0, 0, '{wash}', now() + interval '1 hour', now() + interval '3 hours'
         FROM generate_series(1, %(past)s)""",
    """INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m, created_at)
       SELECT j.id, w.worker_id, 1, 1, random() * 5000, w.at
         FROM (SELECT id, row_number() OVER () AS n FROM jobs WHERE business_id = 'b-past') j
        CROSS JOIN LATERAL (
            SELECT DISTINCT ON (worker_id) worker_id, at
              FROM (SELECT 'bench-' || floor(random() * %(workers)s + j.n * 0)::int AS worker_id,
                           now() - random() * interval '100 minutes' AS at
                      FROM generate_series(1, 10)) picks) w""",
    """WITH ranked AS (
         SELECT job_id, worker_id, created_at,
                row_number() OVER (PARTITION BY job_id ORDER BY worker_id) AS n
           FROM job_offers)
       INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
       SELECT ranked.job_id, 'job.assigned', 2, ranked.worker_id,
              ranked.created_at + random() * interval '30 s',
              dispatch_job_json(j)::jsonb || jsonb_build_object(
                  'assignee_id', worker_id, 'status', 'assigned', 'version', 2)
         FROM ranked JOIN jobs j ON j.id = ranked.job_id WHERE n = 1""",
    """WITH ranked AS (
         SELECT job_id, worker_id, created_at,
                row_number() OVER (PARTITION BY job_id ORDER BY worker_id) AS n
           FROM job_offers)
       INSERT INTO job_declines (job_id, worker_id, declined_at)
       SELECT job_id, worker_id, created_at + random() * interval '40 s'
         FROM ranked WHERE n BETWEEN 2 AND 5""",
    """INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
       SELECT job_id, 'job.reopened', 3, 'system', occurred_at + interval '10 minutes',
              data || jsonb_build_object('assignee_id', null, 'status', 'open', 'version', 3)
         FROM job_events WHERE type = 'job.assigned' AND random() < 0.1""",
    "VACUUM ANALYZE",
]


@dataclass
class Report:
    workers: int
    jobs: int
    history_offers: int
    per_policy: dict[str, Timing]  # one wave's whole cost (waves 1 and 2 of each job)
    offers_per_wave: dict[str, float]
    market_fit_ms: float  # the sweeper's fit of the market's curve (dispatch.offers.market)
    market_answers: int  # the answered offers it read

    @property
    def mean_ratio(self) -> float:
        likely, nearest = self.per_policy["likely"], self.per_policy["nearest"]
        return (likely.seconds / likely.count) / (nearest.seconds / nearest.count)

    @property
    def p50_ratio(self) -> float:
        return self.per_policy["likely"].p50_ms / self.per_policy["nearest"].p50_ms


def point(rng: random.Random) -> tuple[float, float]:
    from tests.support import destination

    return destination(*CENTRE, rng.uniform(0, 360), abs(rng.gauss(0, 2500)))


def prepare(url: str, workers: int, seed: int) -> int:
    from dispatch import db
    from dispatch.workers import locations
    from dispatch.workers.models import WorkerPosition

    rng = random.Random(seed)
    with db.connect(url) as conn:
        conn.execute(
            """INSERT INTO workers (id, skills, ratings, stars)
               SELECT 'bench-' || n, '{wash}', r, r * 4 + (n %% 2) * r / 2
                 FROM generate_series(0, %(workers)s - 1) n,
                      LATERAL (SELECT (n %% 7)::int AS r) rated""",
            {"workers": workers},
        )
        for statement in HISTORY:
            conn.execute(statement, {"past": workers * 2, "workers": workers})
        offers = conn.execute("SELECT count(*) AS n FROM job_offers").fetchone()
    for n in range(workers):
        lat, lng = point(rng)
        locations.report(f"bench-{n}", WorkerPosition(lat=lat, lng=lng))
    return int(offers["n"]) if offers else 0


def fit_market(url: str) -> tuple[float, int]:
    """The sweeper's fit of the market's curve on the record, once: (ms, answers read). The
    record's answers are folded first, as the sweeper's passes would have (it is finished: no
    settle); the time is the fit's."""
    from dispatch import db
    from dispatch.offers import market

    with db.connect(url) as conn:
        while market.fold(conn, settle_s=0):
            conn.commit()
        began = time.perf_counter_ns()
        assert market.refit(conn)
        spent = time.perf_counter_ns() - began
        row = conn.execute("SELECT answers FROM offer_market WHERE area = -1").fetchone()
    return spent / 1e6, int(row["answers"]) if row else 0


def measure(url: str, jobs: int, seed: int) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    from dispatch import db
    from dispatch.config import settings
    from dispatch.jobs import commands
    from dispatch.jobs.requests import CreateJob
    from dispatch.offers import waves
    from tests.support import job_body

    rng = random.Random(seed + 1)
    latencies: dict[str, list[int]] = {p: [] for p in POLICIES}
    offered: dict[str, list[int]] = {p: [] for p in POLICIES}
    with db.connect(url) as conn:
        for n in range(jobs + 5):  # the first five warm up
            lat, lng = point(rng)
            for policy in POLICIES if n % 2 else reversed(POLICIES):
                os.environ["DISPATCH_OFFER_POLICY"] = policy
                settings.cache_clear()
                settings()
                job = commands.create_job(
                    conn, "b-bench", CreateJob.model_validate(job_body(["wash"], lat, lng))
                )
                request = waves.WaveRequest(job_id=job.id, version=1, wave=1)
                for wave in (request, request.next()):
                    began = time.perf_counter_ns()
                    report = waves.run_wave(conn, wave, lambda *_: None)
                    spent = time.perf_counter_ns() - began
                    if n >= 5:
                        latencies[policy].append(spent)
                        offered[policy].append(report.offered)
    return latencies, offered


def run(url: str, workers: int = 2000, jobs: int = 150, seed: int = 24) -> Report:
    from dispatch.config import settings
    from dispatch.observability import logger
    from dispatch.workers import locations

    level = logger.log_level
    logger.setLevel("WARNING")  # a log line per wave is not what we measure
    saved = {k: os.environ.get(k) for k in ("DISPATCH_OFFER_POLICY", "DISPATCH_REDIS_NAMESPACE",
                                            "OFFER_QUEUE_URL")}  # fmt: skip
    os.environ["DISPATCH_REDIS_NAMESPACE"] = f"bench-offers-{uuid.uuid4().hex[:8]}"
    os.environ.pop("OFFER_QUEUE_URL", None)
    settings.cache_clear()
    locations.client.cache_clear()
    try:
        history = prepare(url, workers, seed)
        fit_ms, answers = fit_market(url)
        latencies, offered = measure(url, jobs, seed)
        locations.forget_everyone()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        settings.cache_clear()
        locations.client.cache_clear()
        logger.setLevel(level)
    return Report(
        workers=workers,
        jobs=jobs,
        history_offers=history,
        per_policy={p: timing(latencies[p], sum(latencies[p]) / 1e9) for p in POLICIES},
        offers_per_wave={p: sum(offered[p]) / max(1, len(offered[p])) for p in POLICIES},
        market_fit_ms=fit_ms,
        market_answers=answers,
    )


def report(result: Report) -> str:
    rows = [
        f"Offer waves, {result.workers} workers with {result.history_offers} recorded offers,"
        f" {result.jobs} jobs per policy (waves 1 and 2 each):",
        "",
        "| policy | waves | mean (ms) | p50 (ms) | p99 (ms) | offers per wave |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for policy, t in result.per_policy.items():
        rows.append(
            f"| {policy} | {t.count} | {1000 * t.seconds / max(1, t.count):.2f} |"
            f" {t.p50_ms:.2f} | {t.p99_ms:.2f} | {result.offers_per_wave[policy]:.1f} |"
        )
    rows += [
        "",
        f"likely / nearest per wave: mean {result.mean_ratio:.2f}x, p50 {result.p50_ratio:.2f}x"
        " (at most 1.5x asked)",
        "",
        f"The market's curve (the sweeper, every ten minutes): fit on {result.market_answers}"
        f" answered offers in {result.market_fit_ms:.0f} ms",
    ]
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.offers", description=__doc__)
    parser.add_argument("--workers", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=150)
    args = parser.parse_args(argv)
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")  # stdout is not measured
    os.environ["REDIS_URL"] = bench_redis()
    with bench_database() as url:
        os.environ["DATABASE_URL"] = url
        result = run(url, args.workers, args.jobs)
    text = report(result)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "offers.json").write_text(
        json.dumps(
            {**asdict(result), "mean_ratio": result.mean_ratio, "p50_ratio": result.p50_ratio},
            indent=2,
            default=str,
        )
    )
    (RESULTS / "offers.md").write_text(text)


if __name__ == "__main__":
    main()
