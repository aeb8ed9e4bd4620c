"""Load and soak: many clients against the local stack for a bounded time, then the history
checker over everything they did.

    make bench-soak              (or: python -m bench.soak [--seconds 60] [--workers 16])

Businesses post jobs and sometimes cancel them; workers report where they are, look for jobs
nearby, race each other to accept the nearest, and then work the job through (photos uploaded
for real, start, complete), check in, release it, or abandon it (the lease, 3 s here, runs
out and the sweeper reopens the job). One request in ten that changes something is sent again
with the same idempotency key, as a client that lost the answer would. Every request and its
answer is recorded (bench/history.py); at the end the stack is given time to settle (sweeps,
relays, publishes) and the history is checked. Reported: throughput, p50/p99 per route, answers
by status, 5xx (aim: none) and invariant violations (aim: none). Before the clock starts, one
business and one worker call each route once (`warm_up`): their requests are in the history and
its totals, not in the windows.

By default it is issue 36's scenario: 48 clients (12 businesses, 36 workers) for 3 minutes,
reported per 30 s (requests/s, `GET /jobs/{id}` p50, unpublished events at the window's end)
with a last line saying whether the stack held: the last 30 s served at least half of what
the first 30 s did, `GET /jobs/{id}` p50 under 100 ms in every window, and unpublished events
did not pile up (`aims`).
"""

import argparse
import json
import random
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from bench.common import bench_database
from dispatch import db
from dispatch_local import history as hist
from dispatch_local import photos, tokens
from dispatch_local.stack import start_stack, stop_stack

RESULTS = Path(__file__).parent / "results"
CENTRE = (12.97, 77.59)
LEASE_SECONDS = 3
SWEEP_SECONDS = 1
REPLAY_SHARE = 0.1
PAUSE_SECONDS = 0.02  # a client's breath between actions
WINDOW_SECONDS = 30  # the report's stretches: a stack that wilts shows it here
SETTLE_SECONDS = 60  # longest wait for sweeps, relays and publishes after the load stops
POLL_SECONDS = 0.5
STOP_SECONDS = 90


def near_centre(rng: random.Random, km: float = 4) -> dict[str, float]:
    return {
        "lat": CENTRE[0] + rng.uniform(-km, km) / 111.32,
        "lng": CENTRE[1] + rng.uniform(-km, km) / 108.5,
    }


class Client:
    """One person with their own token and connection; every request goes into the history."""

    def __init__(
        self,
        base: str,
        sub: str,
        role: str,
        log: hist.History,
        seed: int,
        pause: float = PAUSE_SECONDS,
    ) -> None:
        self.base, self.sub, self.log, self.pause = base, sub, log, pause
        self.rng = random.Random(seed)
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Bearer {tokens.issue(sub, role)}"

    def send(self, route: str, method: str, path: str, body: Any = None) -> hist.Op:
        changes = method != "GET"
        key = str(uuid.uuid4()) if changes else None
        op = self._send(route, method, path, body, key, None)
        if changes and self.rng.random() < REPLAY_SHARE:
            self._send(route, method, path, body, key, op.index)  # as if the answer was lost
        return op

    def _send(
        self, route: str, method: str, path: str, body: Any, key: str | None, retry_of: int | None
    ) -> hist.Op:
        op = self.log.invoke(
            hist.Op(self.sub, route, method, path, key, body, time.monotonic(), retry_of=retry_of)
        )
        headers = {"Idempotency-Key": key} if key else {}
        try:
            reply = self.http.request(
                method, self.base + path, json=body, headers=headers, timeout=30
            )
            op.status = reply.status_code
            op.response = reply.json() if reply.content else None
        except (requests.RequestException, ValueError):
            op.status = None
        op.completed_at = time.monotonic()
        op.outcome = hist.outcome_of(op.status)
        return op


def job_body(rng: random.Random) -> dict[str, Any]:
    """A job near the centre, asking for a washer, in a window that starts in an hour."""
    start = time.time() + 3600
    window = {
        "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start)),
        "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(start + 7200)),
    }
    return {"location": near_centre(rng), "skills": ["wash"], "window": window}


def warm_up(base: str, log: hist.History) -> None:
    """Every route a client starts with, answered once before the clock starts: a fresh stack
    starts each function's environments on its first requests, seconds each on a busy machine,
    and a short run could end before any worker reached an accept. Part of the history (its
    rows are in the database the checker reads), not of the figures' windows."""
    owner = Client(base, "soak-warm-b", "business", log, 0)
    washer = Client(base, "soak-warm-w", "worker", log, 1)
    washer.send("profile", "PUT", "/workers/me", {"skills": ["wash"]})
    job = owner.send("create", "POST", "/jobs", job_body(owner.rng)).job
    here = near_centre(washer.rng)
    washer.send("location", "PUT", "/workers/me/location", here)
    washer.send("nearby", "GET", f"/jobs/nearby?lat={here['lat']}&lng={here['lng']}&limit=3")
    if job is not None:
        owner.send("read", "GET", f"/jobs/{job['id']}")
        held = washer.send("accept", "POST", f"/jobs/{job['id']}/accept", {}).job
        if held is not None:
            step(washer, held, "release")


def business(client: Client, stop: threading.Event) -> None:
    mine: list[dict[str, Any]] = []
    while not stop.is_set():
        created = client.send("create", "POST", "/jobs", job_body(client.rng))
        if created.job:
            mine.append(created.job)
        if mine:  # the business app looks at one of its jobs, and sometimes cancels it
            job = mine[client.rng.randrange(len(mine))]
            seen = client.send("read", "GET", f"/jobs/{job['id']}")
            if (
                client.rng.random() < 0.1
                and seen.job
                and seen.job["status"] in ("open", "assigned")
            ):
                mine.remove(job)
                client.send(
                    "transition",
                    "POST",
                    f"/jobs/{job['id']}/transitions",
                    {"event": "cancel", "version": seen.job["version"]},
                )
        stop.wait(client.pause * 5)


def worker(client: Client, stop: threading.Event) -> None:
    client.send("profile", "PUT", "/workers/me", {"skills": ["wash"]})
    while not stop.is_set():
        here = near_centre(client.rng)
        if client.rng.random() < 0.3:
            client.send("location", "PUT", "/workers/me/location", here)
        found = client.send(
            "nearby",
            "GET",
            f"/jobs/nearby?lat={here['lat']}&lng={here['lng']}&radius_m=8000&limit=3",
        )
        jobs = (found.response or {}).get("jobs", []) if found.outcome == "ok" else []
        if not jobs:
            stop.wait(client.pause)
            continue
        target = client.rng.choice(jobs)
        won = client.send("accept", "POST", f"/jobs/{target['id']}/accept", {})
        if won.job:
            work(client, won.job, stop)
        elif (won.response or {}).get("error", {}).get("code") == "WORKER_BUSY":
            stop.wait(LEASE_SECONDS)  # an abandoned job of ours is still live: wait it out
        stop.wait(client.pause)


def work(client: Client, job: dict[str, Any], stop: threading.Event) -> None:
    roll = client.rng.random()
    if roll < 0.1:
        return  # abandon: no check-in; the lease runs out and the sweeper reopens the job
    if roll < 0.25:
        step(client, job, "release")
        return
    if roll < 0.4:
        job = step(client, job, "check_in") or job
    job = attach(client, job, "before") or job
    job = step(client, job, "start") or job
    job = attach(client, job, "after") or job
    step(client, job, "complete")


def step(client: Client, job: dict[str, Any], event: str) -> dict[str, Any] | None:
    body = {"event": event, "version": job["version"]}
    return client.send("transition", "POST", f"/jobs/{job['id']}/transitions", body).job


def attach(client: Client, job: dict[str, Any], slot: str) -> dict[str, Any] | None:
    slot_op = client.send("photo", "POST", "/photos", {"content_type": "image/jpeg"})
    if slot_op.outcome != "ok":
        return None
    upload = photos.upload(slot_op.response, b"\xff\xd8\xff soak", timeout=30)
    if upload.status_code not in (200, 204):
        return None
    body = {"photo_id": slot_op.response["photo_id"]}
    return client.send("attach", "PUT", f"/jobs/{job['id']}/photos/{slot}", body).job


@dataclass(frozen=True)
class RouteFigures:
    requests: int
    ok: int
    fail: int
    unknown: int
    p50_ms: float
    p99_ms: float


@dataclass(frozen=True)
class Window:
    """One stretch of the run: what it served, how fast a job was read, and the outbox."""

    began_s: float
    per_second: float
    read_p50_ms: float | None
    accept_p50_ms: float | None
    unpublished: int  # job_events not yet on the bus at the window's end
    unpublished_offers: int  # offer_events, likewise


@dataclass(frozen=True)
class SoakReport:
    seconds: float
    businesses: int
    workers: int
    requests: int
    per_second: float
    routes: dict[str, RouteFigures]
    statuses: dict[str, int]
    server_errors: int
    violations: list[str]
    settled_seconds: float
    windows: list[Window]


def figures(ops: list[hist.Op]) -> RouteFigures:
    latencies = sorted((op.completed_at - op.invoked_at) * 1000 for op in ops)
    cuts = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else []
    p50, p99 = (cuts[49], cuts[98]) if cuts else (latencies[0], latencies[0])
    outcomes = Counter(op.outcome for op in ops)
    return RouteFigures(len(ops), outcomes["ok"], outcomes["fail"], outcomes["unknown"], p50, p99)


UNPUBLISHED = """
SELECT (SELECT count(*) FROM job_events WHERE published_at IS NULL) AS jobs,
       (SELECT count(*) FROM offer_events WHERE published_at IS NULL) AS offers
"""

Backlog = tuple[float, int, int]  # when (monotonic), unpublished job_events, offer_events


def watch_outbox(url: str, stop: threading.Event, seen: list[Backlog]) -> None:
    """The unpublished events every second while the load runs: a pile that grows means the
    relay and the publisher do not keep up."""
    with db.connect(url) as conn:
        conn.autocommit = True
        while not stop.is_set():
            row = conn.execute(UNPUBLISHED).fetchone()
            if row:
                seen.append((time.monotonic(), int(row["jobs"]), int(row["offers"])))
            stop.wait(1)


def windows(ops: list[hist.Op], outbox: list[Backlog], began: float, ended: float) -> list[Window]:
    found: list[Window] = []
    start = began
    while start < ended - 1:
        end = min(start + WINDOW_SECONDS, ended)
        done = [o for o in ops if start <= o.completed_at < end]

        def p50(route: str, done: list[hist.Op] = done) -> float | None:
            times = [(o.completed_at - o.invoked_at) * 1000 for o in done if o.route == route]
            return statistics.median(times) if times else None

        backlog = [(jobs, offers) for t, jobs, offers in outbox if t < end]
        jobs, offers = backlog[-1] if backlog else (0, 0)
        found.append(
            Window(
                start - began, len(done) / (end - start), p50("read"), p50("accept"), jobs, offers
            )
        )
        start = end
    return found


def settle(conn: db.Connection) -> float:
    """Wait until the sweeper and the outbox have caught up (or the limit passes)."""
    began = time.monotonic()
    while time.monotonic() - began < SETTLE_SECONDS:
        pending = list(hist.every_event_published(conn)) + list(
            hist.expired_leases_reopened(conn, LEASE_SECONDS)
        )
        if not pending:
            break
        time.sleep(POLL_SECONDS)
    return time.monotonic() - began


def soak(
    database_url: str,
    seconds: float,
    businesses: int,
    workers: int,
    pause: float = PAUSE_SECONDS,
) -> SoakReport:
    log = hist.History()
    with tempfile.TemporaryDirectory(prefix="dispatch-soak-") as home:
        base, process = start_stack(
            database_url,
            Path(home),
            DISPATCH_LEASE_SECONDS=str(LEASE_SECONDS),
            DISPATCH_SWEEP_INTERVAL_SECONDS=str(SWEEP_SECONDS),
            DISPATCH_OFFER_WAVE_INTERVAL_SECONDS="5",
        )
        try:
            stop = threading.Event()
            people = [
                (business, Client(base, f"soak-b-{n}", "business", log, n, pause))
                for n in range(businesses)
            ] + [
                (worker, Client(base, f"soak-w-{n}", "worker", log, 1000 + n, pause))
                for n in range(workers)
            ]
            threads = [threading.Thread(target=run, args=(c, stop)) for run, c in people]
            outbox: list[Backlog] = []
            threads.append(threading.Thread(target=watch_outbox, args=(database_url, stop, outbox)))
            warm_up(base, log)
            began = time.monotonic()
            for t in threads:
                t.start()
            stop.wait(seconds)
            stop.set()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - began
            with db.connect(database_url) as conn:
                settled = settle(conn)
                violations = hist.check(log, conn, lease_grace_seconds=LEASE_SECONDS)
        finally:
            try:
                # A stack that wilted stops slowly (its pool finishes what it holds); killed,
                # it would leave its embedded Redis behind.
                stop_stack(process, timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:  # killed instead: the figures still stand
                print("the stack did not stop within its grace period; killed", flush=True)
    by_route: dict[str, list[hist.Op]] = defaultdict(list)
    for op in log.ops:
        by_route[op.route].append(op)
    statuses = Counter(str(op.status) for op in log.ops)
    RESULTS.mkdir(exist_ok=True)
    log.save(RESULTS / "soak-history.jsonl")
    return SoakReport(
        seconds=elapsed,
        businesses=businesses,
        workers=workers,
        requests=len(log.ops),
        per_second=sum(1 for op in log.ops if op.invoked_at >= began) / elapsed,  # timed
        routes={route: figures(ops) for route, ops in sorted(by_route.items())},
        statuses=dict(sorted(statuses.items())),
        server_errors=sum(1 for op in log.ops if op.status is None or op.status >= 500),
        violations=violations,
        settled_seconds=settled,
        # Whole windows of the planned run: requests still finishing after the stop are not a
        # stretch of their own.
        windows=windows(log.ops, outbox, began, began + seconds),
    )


def report(r: SoakReport) -> str:
    lines = [
        f"Soak: {r.businesses} businesses and {r.workers} workers for {r.seconds:.0f} s against"
        f" the local stack (lease {LEASE_SECONDS} s, sweep every {SWEEP_SECONDS} s):"
        f" {r.requests:,} requests, {r.per_second:,.0f}/s. 5xx or no answer: {r.server_errors}."
        f" Invariant violations: {len(r.violations)} (checked after {r.settled_seconds:.1f} s"
        " of settling).",
        "",
        "| route | requests | ok | refused (4xx) | unknown (5xx, none) | p50 ms | p99 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {route} | {f.requests:,} | {f.ok:,} | {f.fail:,} | {f.unknown:,} | {f.p50_ms:.1f} |"
        f" {f.p99_ms:.1f} |"
        for route, f in r.routes.items()
    ]
    lines += ["", "Answers by status: " + ", ".join(f"{s}: {n:,}" for s, n in r.statuses.items())]
    lines += [
        "",
        f"Every {WINDOW_SECONDS} s of the run:",
        "",
        "| from (s) | requests/s | GET /jobs/{id} p50 ms | accept p50 ms"
        " | unpublished job events | unpublished offer events |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {w.began_s:.0f} | {w.per_second:.0f} | {_ms(w.read_p50_ms)} | {_ms(w.accept_p50_ms)}"
        f" | {w.unpublished:,} | {w.unpublished_offers:,} |"
        for w in r.windows
    ]
    if r.violations:
        lines += ["", "Violations (first 20):", *[f"- {v}" for v in r.violations[:20]]]
    if r.windows:
        lines += ["", aims(r.windows)]
    return "\n".join(lines)


READ_P50_AIM_MS = 100
# "Do not pile up": the backlog at the end may be at most this many times the first window's,
# or PILE_FLOOR events (a few in flight between relay and publisher are no pile).
PILE_FACTOR = 2
PILE_FLOOR = 50


def aims(found: list[Window]) -> str:
    """Issue 36's three aims over the run's windows, each said held or missed."""
    first, last = found[0], found[-1]
    kept = last.per_second / max(first.per_second, 1e-9)
    worst = max((w.read_p50_ms or 0) for w in found)
    backlog = [w.unpublished for w in found]
    piled = backlog[-1] > max(PILE_FACTOR * backlog[0], PILE_FLOOR)
    held = [kept >= 0.5, worst < READ_P50_AIM_MS, not piled]
    verdict = "all three aims held" if all(held) else f"{held.count(False)} of three aims missed"
    return (
        f"last window served {kept:.2f}x the first (aim >= 0.5: {_word(held[0])});"
        f" worst GET /jobs/{{id}} p50 {worst:.0f} ms (aim < {READ_P50_AIM_MS}:"
        f" {_word(held[1])}); unpublished job events by window {backlog}"
        f" (aim: no pile-up: {_word(held[2])}): {verdict}"
    )


def _word(held: bool) -> str:
    return "held" if held else "missed"


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.soak", description=__doc__.split("\n")[0])
    # Issue 36's scenario: 48 clients for 3 minutes.
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--businesses", type=int, default=12)
    parser.add_argument("--workers", type=int, default=36)
    parser.add_argument(
        "--pause",
        type=float,
        default=PAUSE_SECONDS,
        help="seconds a client waits between actions (more: a load the machine keeps up with)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a short run that only proves it works"
    )
    args = parser.parse_args(argv)
    seconds, businesses, workers = (
        (5, 2, 6) if args.quick else (args.seconds, args.businesses, args.workers)
    )
    with bench_database() as url:
        result = soak(url, seconds, businesses, workers, args.pause)
    text = report(result)
    print(text)
    (RESULTS / "soak.md").write_text(text + "\n")
    (RESULTS / "soak.json").write_text(json.dumps(result, default=lambda o: o.__dict__))


if __name__ == "__main__":
    main()
