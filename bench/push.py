"""Push: offers from the commit to the device, 2,000 phones connected at once.

    make bench-push            (or: python -m bench.push [--clients 2000] [--seconds 60])

The local stack (`dispatch dev`) with `--clients` workers signed up, placed at random in the
district's 40 x 40 km metro and connected to `ws://.../ws` at once, each with its own token
and socket. Businesses post jobs at the district's rush rate (720 jobs an hour, the second
hour of sim/scenarios/district.toml) times `--speed` (12: the pace `make simulate` drives the
stack at), anywhere in the metro; nobody accepts, so every job's three waves (3, 10 and 25
workers, the seed's) are offered, one wave every `WAVE_SECONDS`. Each `offer.created` goes
the whole way a deployed one goes: the wave's commit, the outbox queue, the publisher's put on
the bus and its hand-off to push (who may hear it), the delivery queue, the poster's function,
the management API (`PostToConnection`), the socket.

Measured on the devices: commit-to-device latency (the offer event's `occurred_at`, its
transaction's time, to its arrival on the phone it names) p50 / p99 / max, and messages per
second delivered. Baseline, in the same run: a bare `websockets` server holding the same
number of connected clients that sends the very same messages to the very same clients at the
very same moments (their arrival times, replayed), its send-to-device latency: what the socket
hop alone costs on this machine. Also: offers the database made that no device heard.
"""

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests
import websockets

from bench.common import bench_database, one
from dispatch import db
from dispatch_local import tokens
from dispatch_local.stack import start_stack, stop_stack

RESULTS = Path(__file__).parent / "results"
METRO = (12.79, 77.41, 13.15, 77.78)  # the district's border: min lat, min lng, max lat, max lng
RUSH_JOBS_PER_HOUR = 720  # the district's 600 an hour at its second hour's 1.2
WAVES = "3@3000,10@5000,25@8000"  # the seed's
WAVE_SECONDS = 5
SETTLE_SECONDS = 30

OFFERS_MADE = """
SELECT count(*) AS n FROM offer_events
 WHERE type = 'offer.created' AND occurred_at >= %(since)s
"""


@dataclass(frozen=True)
class Side:
    name: str
    clients: int
    messages: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def per_second(self) -> float:
        return self.messages / self.seconds if self.seconds else 0.0


@dataclass(frozen=True)
class PushReport:
    clients: int
    speed: float
    jobs: int
    offers_made: int
    offers_heard: int
    ours: Side
    bare: Side


def percentile(values: Sequence[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def side(name: str, clients: int, latencies_s: list[float], arrivals: list[float]) -> Side:
    ordered = sorted(latencies_s)
    span = max(arrivals) - min(arrivals) if len(arrivals) > 1 else 0.0
    return Side(
        name=name,
        clients=clients,
        messages=len(ordered),
        seconds=span,
        p50_ms=percentile(ordered, 50) * 1000,
        p99_ms=percentile(ordered, 99) * 1000,
        max_ms=(ordered[-1] if ordered else 0.0) * 1000,
    )


def place(rng: random.Random) -> dict[str, float]:
    return {"lat": rng.uniform(METRO[0], METRO[2]), "lng": rng.uniform(METRO[1], METRO[3])}


def sign_up(base: str, subs: list[str], seed: int) -> None:
    """Every worker: a profile with every skill, a position somewhere in the metro."""

    def one(n_sub: tuple[int, str]) -> None:
        n, sub = n_sub
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {tokens.issue(sub, 'worker')}"
        body = {"skills": ["wash", "iron", "repair"]}
        for path, payload in (
            ("/workers/me", body),
            ("/workers/me/location", place(random.Random(seed + n))),
        ):
            key = {"Idempotency-Key": str(uuid.uuid4())}
            reply = http.put(base + path, json=payload, headers=key, timeout=60)
            reply.raise_for_status()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, enumerate(subs)))


class Phones:
    """`subs` connected phones in this process: what each heard, and when."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, dict[str, Any], float]] = []  # (sub, message, arrived)
        self.sockets: list[Any] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self, url_of: Any, subs: list[str], hello: bool = False) -> None:
        async def one(sub: str) -> None:
            socket = await websockets.connect(url_of(sub), open_timeout=120, max_queue=None)
            if hello:
                await socket.send(sub)
            self.sockets.append(socket)
            self.tasks.append(asyncio.create_task(self._listen(sub, socket)))

        for start in range(0, len(subs), 100):  # a hundred at a time: a phone fleet waking up
            await asyncio.gather(*(one(sub) for sub in subs[start : start + 100]))

    async def _listen(self, sub: str, socket: Any) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for message in socket:
                self.heard.append((sub, json.loads(message), time.time()))

    async def close(self) -> None:
        await asyncio.gather(*(s.close() for s in self.sockets), return_exceptions=True)
        await asyncio.gather(*self.tasks, return_exceptions=True)


def post_jobs(base: str, seconds: float, per_second: float, stop: threading.Event) -> int:
    rng = random.Random(7)
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {tokens.issue('push-bench-business', 'business')}"
    began, posted = time.monotonic(), 0
    while time.monotonic() - began < seconds and not stop.is_set():
        due = began + posted / per_second
        time.sleep(max(0.0, due - time.monotonic()))
        now = time.time()
        body: dict[str, Any] = {
            "location": place(rng),
            "skills": [rng.choice(["wash", "iron", "repair"])],
            "window": {
                "start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 1800)),
                "end": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 9000)),
            },
        }
        reply = http.post(
            base + "/jobs", json=body, headers={"Idempotency-Key": str(uuid.uuid4())}, timeout=60
        )
        posted += reply.status_code == 201
    return posted


# -- the baseline: a bare websockets broadcast of the same messages -------------------------


def bare_server(port: int, ready: Any) -> None:
    """A plain `websockets` server: each client says who it is; a control connection sends
    the schedule [(offset_s, sub, text)], replayed at those offsets, each message prefixed by
    the moment it was sent."""

    async def main() -> None:
        from websockets.asyncio.server import serve

        clients: dict[str, Any] = {}

        async def handler(socket: Any) -> None:
            first = await socket.recv()
            if first != "schedule":
                clients[first] = socket
                await socket.wait_closed()
                return
            schedule = json.loads(await socket.recv())
            began = time.time()
            for offset, sub, text in schedule:
                delay = began + offset - time.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                await clients[sub].send(f"{time.time():.6f} {text}")
            await socket.send("done")

        # The schedule comes as one message: at 12 times the rush more than websockets'
        # default 1 MiB (5,510 messages, the 12x run of 2026-12-06 failed on it).
        async with serve(handler, "127.0.0.1", port, max_queue=None, max_size=None):
            ready.set()
            await asyncio.Future()

    asyncio.run(main())


async def replay_bare(port: int, subs: list[str], messages: list[tuple[float, str, str]]) -> Side:
    """The same messages, to the same clients, at the same offsets, over a bare server."""
    phones = Phones()
    raw: list[tuple[str, str, float]] = []

    async def open_all() -> None:
        async def one(sub: str) -> None:
            socket = await websockets.connect(
                f"ws://127.0.0.1:{port}", open_timeout=120, max_queue=None
            )
            await socket.send(sub)
            phones.sockets.append(socket)

            async def listen() -> None:
                with contextlib.suppress(websockets.ConnectionClosed):
                    async for message in socket:
                        raw.append((sub, str(message), time.time()))

            phones.tasks.append(asyncio.create_task(listen()))

        for start in range(0, len(subs), 100):
            await asyncio.gather(*(one(sub) for sub in subs[start : start + 100]))

    await open_all()
    await asyncio.sleep(1)
    async with websockets.connect(f"ws://127.0.0.1:{port}", max_size=None) as control:
        await control.send("schedule")
        await control.send(json.dumps(messages))
        assert await control.recv() == "done"
    await asyncio.sleep(1)
    await phones.close()
    latencies = [arrived - float(text.split(" ", 1)[0]) for _, text, arrived in raw]
    return side("bare websockets broadcast", len(subs), latencies, [a for _, _, a in raw])


# -- the run ------------------------------------------------------------------------------------


def run(database_url: str, clients: int, seconds: float, speed: float) -> PushReport:
    subs = [f"push-w-{n}" for n in range(clients)]
    with tempfile.TemporaryDirectory(prefix="dispatch-push-") as home:
        base, process = start_stack(
            database_url,
            Path(home),
            DISPATCH_OFFER_WAVES=WAVES,
            DISPATCH_OFFER_WAVE_INTERVAL_SECONDS=str(WAVE_SECONDS),
            DISPATCH_OFFER_NEXT_WAVE_ON_DECLINES="false",
            DISPATCH_LOCATION_FRESH_SECONDS="3600",
        )
        try:
            print(f"signing up {clients} workers", flush=True)
            sign_up(base, subs, seed=11)
            ours = asyncio.run(measure_ours(base, database_url, subs, seconds, speed))
        finally:
            stop_stack(process)
    report, schedule = ours
    port = free_port()
    ready = multiprocessing.get_context("spawn").Event()
    server = multiprocessing.get_context("spawn").Process(
        target=bare_server, args=(port, ready), daemon=True
    )
    server.start()
    try:
        ready.wait(60)
        print(f"baseline: the same {len(schedule)} messages over a bare server", flush=True)
        bare = asyncio.run(replay_bare(port, subs, schedule))
    finally:
        server.terminate()
    return PushReport(**{**asdict_shallow(report), "bare": bare})


def asdict_shallow(report: PushReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in report.__dataclass_fields__}


def free_port() -> int:
    from dispatch_local.stack import free_port as free

    return free()


async def measure_ours(
    base: str, database_url: str, subs: list[str], seconds: float, speed: float
) -> tuple[PushReport, list[tuple[float, str, str]]]:
    phones = Phones()
    ws_base = base.replace("http://", "ws://", 1) + "/ws?token="
    print(f"connecting {len(subs)} phones", flush=True)
    await phones.open(lambda sub: ws_base + tokens.issue(sub, "worker", ttl_seconds=7200), subs)
    with db.connect(database_url) as conn:
        since = str(one(conn.execute("SELECT now()::text AS t"))["t"])
        per_second = RUSH_JOBS_PER_HOUR * speed / 3600
        print(f"posting {per_second:.1f} jobs/s for {seconds:.0f} s", flush=True)
        stop = threading.Event()
        jobs = await asyncio.to_thread(post_jobs, base, seconds, per_second, stop)
        # The last jobs' later waves, and what is still on its way.
        await asyncio.sleep(3 * WAVE_SECONDS)
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            made = one(conn.execute(OFFERS_MADE, {"since": since}))["n"]
            if time.monotonic() > deadline or offers_heard(phones) >= made:
                break
            await asyncio.sleep(0.5)
    await phones.close()
    offers = [
        (sub, m, arrived)
        for sub, m, arrived in phones.heard
        if m["type"] == "offer.created" and m["data"]["worker_id"] == sub
    ]
    latencies = [arrived - iso_seconds(m["occurred_at"]) for _, m, arrived in offers]
    arrivals = [arrived for _, _, arrived in offers]
    first = min(arrivals, default=0.0)
    schedule = sorted(
        (arrived - first, sub, json.dumps(m, separators=(",", ":"))) for sub, m, arrived in offers
    )
    ours = side("ours: commit to device, the whole path", len(subs), latencies, arrivals)
    report = PushReport(
        clients=len(subs),
        speed=speed,
        jobs=jobs,
        offers_made=made,
        offers_heard=len({m["id"] for _, m, _ in offers}),
        ours=ours,
        bare=ours,  # replaced by the baseline's measure
    )
    return report, schedule


def offers_heard(phones: Phones) -> int:
    return sum(1 for _, m, _ in phones.heard if m["type"] == "offer.created")


def iso_seconds(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def report(r: PushReport) -> str:
    p50_ratio = r.ours.p50_ms / r.bare.p50_ms if r.bare.p50_ms else float("inf")
    p99_ratio = r.ours.p99_ms / r.bare.p99_ms if r.bare.p99_ms else float("inf")
    lines = [
        f"{r.clients:,} workers connected at once to the local stack's `/ws`, each with its own"
        f" token and socket; jobs posted at the district's rush rate ({RUSH_JOBS_PER_HOUR} an"
        f" hour) x {r.speed:g} anywhere in its metro, nobody accepting, so each job's three"
        f" waves ({WAVES}, {WAVE_SECONDS} s apart) are offered: {r.jobs} jobs,"
        f" {r.offers_made:,} offers made, {r.offers_heard:,} heard on the phone they name"
        f" ({r.offers_made - r.offers_heard} not). Baseline: the same messages to the same"
        " clients at the same moments from a bare `websockets` server, in the same run.",
        "",
        "| path | clients | messages | msgs/s | p50 ms | p99 ms | max ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {s.name} | {s.clients:,} | {s.messages:,} | {s.per_second:.1f} | {s.p50_ms:.1f} |"
        f" {s.p99_ms:.1f} | {s.max_ms:.1f} |"
        for s in (r.ours, r.bare)
    ]
    lines += [
        "",
        f"Commit to device: p50 {r.ours.p50_ms:.0f} ms, p99 {r.ours.p99_ms:.0f} ms"
        f" ({p50_ratio:.0f}x and {p99_ratio:.0f}x the bare socket hop's). The difference is the"
        " path a deployed offer takes (the wave's commit and relay, the outbox queue, the"
        " publisher's put on the bus and its read of who may hear it, the delivery queue, the"
        " poster's invocation and its management API calls), here through moto and a pool of"
        " local processes on two shared cores.",
        "",
        f"commit to device p50 {r.ours.p50_ms:.0f} ms, p99 {r.ours.p99_ms:.0f} ms;"
        f" bare socket p99 {r.bare.p99_ms:.0f} ms",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.push", description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=120, help="how long jobs are posted")
    parser.add_argument("--speed", type=float, default=1, help="times the rush's real rate")
    parser.add_argument("--quick", action="store_true", help="a short run that proves it works")
    args = parser.parse_args(argv)
    clients, seconds = (100, 10) if args.quick else (args.clients, args.seconds)
    with bench_database() as url:
        result = run(url, clients, seconds, args.speed)
    text = report(result)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "push.md").write_text(text + "\n")
    payload = {**asdict(result), "ours": asdict(result.ours), "bare": asdict(result.bare)}
    (RESULTS / "push.json").write_text(json.dumps(payload))


if __name__ == "__main__":
    main()
