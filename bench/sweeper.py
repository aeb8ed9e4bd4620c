"""Sweeper benchmark: reopen 100k expired leases while the market keeps accepting.

    make bench-sweeper           (or: python -m bench.sweeper [--quick] [--jobs 100000])

1. Batch sizes: the same number of expired leases reopened with each candidate batch size
   while accepts go on: rate per second and accept p99, to justify the default
   (`DISPATCH_SWEEP_BATCH_SIZE`); the sweeper's duty cycle (`DISPATCH_SWEEP_DUTY`) applies.
2. The big sweep: `--jobs` expired leases reopened by `dispatch.sweeper.sweep` with the
   default batch size, while accept callers (the handler's own database path, each with its
   own connection) take other open jobs. Their p50/p99 during the sweep is compared with the
   same callers in the same run with no sweep running: the sweep must not stall the market.
"""

import argparse
import json
import os
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.common import Timing, bench_database, timing
from dispatch import db, idempotency
from dispatch.config import settings
from dispatch.jobs import commands
from dispatch.jobs.models import Job
from dispatch.sweeper import SweepReport, sweep

RESULTS = Path(__file__).parent / "results"
WARM_UP_SECONDS = 0.2

SETUP = [
    "TRUNCATE jobs, job_events, idempotency_keys, workers, photos CASCADE",
    # Expired assignments, each held by its own worker.
    """INSERT INTO jobs (business_id, status, version, assignee_id, lat, lng, skills,
                         window_start, window_end, lease_expires_at)
       SELECT 'b-1', 'assigned', 2, 'held-' || n, 12.97, 77.59, '{}',
              now() + interval '1 hour', now() + interval '3 hours',
              now() - interval '1 minute' - n * interval '1 millisecond'
         FROM generate_series(1, %(expired)s) n""",
    # Open jobs for the accept callers, with workers to take them.
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-1', 12.97, 77.59, '{}', now() + interval '1 hour', now() + interval '3 hours'
         FROM generate_series(1, %(open)s)""",
    "VACUUM ANALYZE jobs",
]


@dataclass
class Report:
    expired: int
    batch_size: int
    duty: float
    reopened: int
    batches: int
    seconds: float
    batch_scan: dict[int, tuple[float, float]]  # size -> (reopened/s, accept p99 ms)
    accepts_idle: Timing
    accepts_during_sweep: Timing

    @property
    def per_second(self) -> float:
        return self.reopened / self.seconds

    @property
    def p99_ratio(self) -> float:
        return self.accepts_during_sweep.p99_ms / self.accepts_idle.p99_ms


def prepare(url: str, expired: int, open_jobs: int) -> list[uuid.UUID]:
    with db.connect(url) as conn:
        for statement in SETUP:
            conn.execute(statement, {"expired": expired, "open": open_jobs})
        return [r["id"] for r in conn.execute("SELECT id FROM jobs WHERE status = 'open'")]


def _accept(
    job_id: uuid.UUID, worker: str, conn: db.Connection, key: idempotency.KeyedRequest
) -> Job:
    return commands.accept_job(conn, job_id, worker, None, key)


def accept_callers(
    url: str, job_ids: list[uuid.UUID], callers: int, stop: threading.Event
) -> tuple[list[int], float]:
    """Accept open jobs until `stop`, from `callers` threads; latencies in ns and seconds run."""
    latencies: list[int] = []
    lock = threading.Lock()
    queue = iter(job_ids)

    def caller(n: int) -> None:
        with db.connect(url) as conn:
            while not stop.is_set():
                with lock:
                    job_id = next(queue, None)
                if job_id is None:
                    return
                worker = f"taker-{n}-{job_id}"
                request = idempotency.KeyedRequest(worker, str(job_id), "fp", "bench")
                t0 = time.perf_counter_ns()
                idempotency.execute(
                    conn,
                    request,
                    partial(_accept, job_id, worker),
                    200,
                )
                elapsed = time.perf_counter_ns() - t0
                with lock:
                    latencies.append(elapsed)

    began = time.perf_counter()
    threads = [threading.Thread(target=caller, args=(n,)) for n in range(callers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, time.perf_counter() - began


def measure_accepts(url: str, job_ids: list[uuid.UUID], callers: int, seconds: float) -> Timing:
    stop = threading.Event()
    timer = threading.Timer(seconds, stop.set)
    timer.start()
    latencies, ran = accept_callers(url, job_ids, callers, stop)
    timer.cancel()
    return timing(latencies, ran)


def sweep_under_load(
    url: str, open_jobs: list[uuid.UUID], callers: int
) -> tuple[SweepReport, float, Timing]:
    """Sweep every expired lease while `callers` keep accepting `open_jobs`."""
    stop = threading.Event()
    during: dict[str, Any] = {}

    def take() -> None:
        during["latencies"], during["seconds"] = accept_callers(url, open_jobs, callers, stop)

    takers = threading.Thread(target=take)
    takers.start()
    time.sleep(WARM_UP_SECONDS)  # the market is busy before the sweep starts
    with db.connect(url) as conn:
        t0 = time.perf_counter()
        result = sweep(conn)
        seconds = time.perf_counter() - t0
    stop.set()
    takers.join()
    return result, seconds, timing(during["latencies"], during["seconds"])


def run(url: str, expired: int, scan_sizes: list[int], scan_jobs: int, callers: int = 2) -> Report:
    scan: dict[int, tuple[float, float]] = {}
    for size in scan_sizes:
        open_jobs = prepare(url, scan_jobs, max(1_000, scan_jobs))
        os.environ["DISPATCH_SWEEP_BATCH_SIZE"] = str(size)
        settings.cache_clear()
        result, seconds, accepts = sweep_under_load(url, open_jobs, callers)
        scan[size] = (result.reopened / seconds, accepts.p99_ms)
    os.environ.pop("DISPATCH_SWEEP_BATCH_SIZE", None)
    settings.cache_clear()

    open_jobs = prepare(url, expired, 200_000 if expired >= 10_000 else 2_000)
    idle_share, sweep_share = open_jobs[: len(open_jobs) // 2], open_jobs[len(open_jobs) // 2 :]
    # Baseline first, on the same kind of data, as the same callers, with no sweep running.
    idle = measure_accepts(url, idle_share, callers, seconds=max(1.0, expired / 20_000))
    result, seconds, during = sweep_under_load(url, sweep_share, callers)
    return Report(
        expired=expired,
        batch_size=settings().sweep_batch_size,
        duty=settings().sweep_duty,
        reopened=result.reopened,
        batches=result.batches,
        seconds=seconds,
        batch_scan=scan,
        accepts_idle=idle,
        accepts_during_sweep=during,
    )


def report(r: Report) -> str:
    lines = [
        f"Reopened {r.reopened:,} of {r.expired:,} expired leases in {r.seconds:.1f} s: "
        f"{r.per_second:,.0f}/s in {r.batches} batches of {r.batch_size}, "
        f"working {r.duty:.0%} of the time.",
        "",
        "| batch size | leases reopened/s | accept p99 ms meanwhile |",
        "| ---: | ---: | ---: |",
    ]
    for size, (rate, p99) in r.batch_scan.items():
        lines.append(f"| {size} | {rate:,.0f} | {p99:.2f} |")
    lines += [
        "",
        "| accepts on other jobs | accepts/s | p50 ms | p99 ms |",
        "| --- | ---: | ---: | ---: |",
        f"| no sweep running | {r.accepts_idle.per_second:,.0f} | {r.accepts_idle.p50_ms:.2f} "
        f"| {r.accepts_idle.p99_ms:.2f} |",
        f"| during the sweep | {r.accepts_during_sweep.per_second:,.0f} "
        f"| {r.accepts_during_sweep.p50_ms:.2f} | {r.accepts_during_sweep.p99_ms:.2f} |",
        "",
        f"p99 during the sweep / p99 idle: {r.p99_ratio:.2f} (aim: at most 2)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.sweeper", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=100_000, help="expired leases to reopen")
    parser.add_argument("--scan", default="100,500,2000,5000", help="batch sizes to compare")
    parser.add_argument("--scan-jobs", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="a tiny run that only proves it works")
    args = parser.parse_args(argv)
    jobs, scan_jobs = (300, 200) if args.quick else (args.jobs, args.scan_jobs)
    with bench_database() as url:
        result = run(url, jobs, [int(s) for s in args.scan.split(",")], scan_jobs)
    text = report(result)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sweeper.md").write_text(text + "\n")
    (RESULTS / "sweeper.json").write_text(json.dumps(asdict(result), indent=2, default=str))


if __name__ == "__main__":
    main()
