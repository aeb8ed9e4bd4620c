"""Retention benchmark: one run's batches on a table with many old jobs.

    make bench-retention         (or: python -m bench.retention [--old-jobs 20000] [--batches 4])

A database holding `old` finished jobs past the hot retention (each with the seed's rows: four
job events with the job's document, three offers with their offer events, a wave, a decline)
and a day of live ones; then `batches` batches of the retention
duty (dispatch.retention.archive_batch, as the archivist, the archive on moto's S3), each timed:
rows per second, and the archive's bytes per job. The pick of a batch must not grow with the
backlog: it is timed on the whole backlog and again after the run (aim: within 2x), and on
jobs that all finished in the same instant (the bench's), the worst case for its order.
"""

import argparse
import gzip
import os
import time
from dataclasses import dataclass
from statistics import median
from typing import Any

from bench.common import bench_database
from dispatch import db, retention
from dispatch_local import environment_restored
from dispatch_local.services import archivist_url

BUCKET = "dispatch-bench-archive"

# The owner fills the tables the way the product leaves them (the triggers hold: offers go to
# an open job, which then finishes).
FILL = [
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-' || (g %% 50), 12.9 + (g %% 100) * 0.001, 77.5 + (g %% 97) * 0.001, '{wash}',
              now() - interval '41 days', now() - interval '40 days'
         FROM generate_series(1, %(jobs)s) g""",
    """INSERT INTO offer_waves (job_id, job_version, wave) SELECT id, 1, 0 FROM jobs""",
    """INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
       SELECT j.id, 'w-' || w, 1, 0, 100 * w FROM jobs j, generate_series(1, 3) w""",
    """INSERT INTO job_declines (job_id, worker_id) SELECT id, 'w-2' FROM jobs""",
    """INSERT INTO offer_events (job_id, type, version, data, published_at)
       SELECT o.job_id, 'offer.created', 1,
              jsonb_build_object('worker_id', o.worker_id, 'distance_m', o.distance_m,
                                 'wave', 0, 'radius_m', 3000,
                                 'job', dispatch_job_summary(j)), now()
         FROM job_offers o JOIN jobs j ON j.id = o.job_id""",
    "UPDATE jobs SET status = 'cancelled', version = 4, updated_at = now() - interval '40 days'",
    """INSERT INTO job_events (job_id, type, version, actor, occurred_at, data, published_at)
       SELECT j.id, (ARRAY['job.created', 'job.assigned', 'job.released', 'job.cancelled'])[v],
              v, 'w-1', now() - interval '40 days', dispatch_job(j), now()
         FROM jobs j, generate_series(1, 4) v""",
    # A day of live jobs beside them: never touched.
    """INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
       SELECT 'b-live', 12.9, 77.5, '{wash}', now() + interval '1 hour', now() + interval '3 hours'
         FROM generate_series(1, %(live)s)""",
    "VACUUM ANALYZE",
]


@dataclass
class Run:
    jobs: int
    rows: int
    seconds: float
    bytes: int

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds


def pick_seconds(conn: db.Connection) -> float:
    """The median time of RETIRABLE_JOBS, the batch's pick (5 runs)."""
    times = []
    for _ in range(5):
        began = time.perf_counter()
        conn.execute(retention.RETIRABLE_JOBS.sql, {"hot_days": 30, "batch_size": 500}).fetchall()
        times.append(time.perf_counter() - began)
    return median(times)


def run(url: str, old_jobs: int, batches: int, batch_size: int = 500) -> dict[str, Any]:
    import boto3

    from dispatch_local import embedded

    with environment_restored("AWS_ENDPOINT_URL"):
        if not os.environ.get("AWS_ENDPOINT_URL"):
            embedded.use_aws_stand_in(embedded.aws())
        embedded.ensure_bucket(BUCKET)
        s3 = boto3.client("s3")
        with db.connect(url) as owner:
            for statement in FILL:
                owner.execute(statement, {"jobs": old_jobs, "live": max(1, old_jobs // 30)})
        runs: list[Run] = []
        last_key: str | None = None  # the last archive written, read back for its size per job
        with db.connect(archivist_url(url)) as archivist:
            pick_full = pick_seconds(archivist)
            for _ in range(batches):
                began = time.perf_counter()
                batch = retention.archive_batch(archivist, s3, BUCKET, 30, batch_size)
                seconds = time.perf_counter() - began
                if batch.key is None:
                    break
                size = s3.head_object(Bucket=BUCKET, Key=batch.key)["ContentLength"]
                runs.append(Run(batch.jobs, sum(batch.rows.values()), seconds, size))
                last_key = batch.key
            pick_after = pick_seconds(archivist)
            body = s3.get_object(Bucket=BUCKET, Key=last_key)["Body"].read() if last_key else b""
    return {
        "old_jobs": old_jobs,
        "runs": runs,
        "pick_full_s": pick_full,
        "pick_after_s": pick_after,
        "raw_bytes_per_job": len(gzip.decompress(body)) / runs[-1].jobs if runs else 0,
    }


def report(result: dict[str, Any]) -> str:
    runs: list[Run] = result["runs"]
    lines = [
        f"Retention: batches of {runs[0].jobs if runs else 0} jobs on {result['old_jobs']:,} "
        "old jobs (dispatch.retention, as the archivist, archive on moto's S3)",
        "",
        "| batch | jobs | rows | seconds | rows/s | archive KB | bytes/job |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for i, r in enumerate(runs, 1):
        lines.append(
            f"| {i} | {r.jobs} | {r.rows:,} | {r.seconds:.2f} | {r.rows_per_second:,.0f} |"
            f" {r.bytes / 1024:,.0f} | {r.bytes / r.jobs:,.0f} |"
        )
    full, after = result["pick_full_s"], result["pick_after_s"]
    lines += [
        "",
        f"pick of a batch: {full * 1000:.1f} ms with the whole backlog, {after * 1000:.1f} ms "
        f"after ({full / after if after else 0:.2f}x); archive raw JSON "
        f"{result['raw_bytes_per_job']:,.0f} bytes/job before gzip",
    ]
    if runs:
        rate = sum(r.rows for r in runs) / sum(r.seconds for r in runs)
        lines.append(f"retention: {rate:,.0f} rows/s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--old-jobs", type=int, default=20_000)
    parser.add_argument("--batches", type=int, default=4)
    args = parser.parse_args()
    with bench_database() as url:
        print(report(run(url, args.old_jobs, args.batches)), flush=True)


if __name__ == "__main__":
    main()
