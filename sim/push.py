"""Push on a sample of the city's phones (issue 23): a seeded sample of workers
(`[workers] push_sample`) hold a real WebSocket to the product's push path and hear an offer
when their socket receives it; the rest hear after a delay drawn from what the sample
measured.

The path is the one the template routes, whole: the outbox publisher, as it puts each event on
the bus, decides who hears it and puts the deliveries on the delivery queue; the poster
(PushPosterFunction) posts them through the management API (boto3's
`apigatewaymanagementapi`, its endpoint this run's push server); the local stack's WebSocket
API (dispatch_local.websocket: `$connect` behind its authorizer, `$disconnect`, the
management API's calls written to the sockets) sends them to the phones. The queues and their
consumers run in the city's process, as every other queue of the run; the push server and the
phones run on an event loop in a thread of their own, over real sockets on 127.0.0.1.

Time. The delay measured is the wall clock's, from the offer's commit (its `occurred_at`) to
its receipt on the phone. The city's clock runs `speed` times the wall's and the product's
own durations are divided by `speed`, but nothing slows the path to the phone: a delay of d
wall seconds is what a phone in a real city waits, so the worker hears the offer d seconds of
the city's time after its commit, not d x speed. The city learns of the receipt only when its
own clock already shows d x speed after the commit; the worker can still act on it in time
as long as the answer they take (`response_seconds`, 5 s or more) ends after that, that is
while d x (speed - 1) is below it (0.1 s at 12x: 1.1 s late, against 5 s and more of deciding).
A decision that falls before the city learned of the offer runs as soon as it can, late (the
run's lag counts it).

The rest: once the sample has heard MEASURED_ENOUGH offers, each other worker's delay is one
of the sample's measured delays, drawn with the worker's own seed (before that, the
scenario's `notify_seconds`). Their losses stay the model's `push_lost`: a socket on this
machine cannot lose what a phone in a tunnel loses; the sample's losses (offers the bus
carried to a sampled worker that no socket received) are reported beside it.
"""

import asyncio
import contextlib
import json
import queue
import random
import secrets
import threading
import time
import warnings
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sim.scenario import Scenario
from sim.state import Job, Worker, percentiles
from sim.transport import Transport
from sim.world import uniform

MEASURED_ENOUGH = 30  # measured delays before the rest draw from them
SETTLE_SECONDS = 3.0  # after the run, for what is still on its way to a phone


def environment(scenario: Scenario) -> dict[str, str]:
    """What the push functions get from the template in AWS, pointing at this run: the
    delivery and gone queues (in process), the management API's endpoint (the sample's push
    server, on a free port), the tokens' issuer, audience and signing secret. None without a
    sample."""
    if not scenario.workers.push_sample:
        return {}
    from dispatch_local import tokens
    from dispatch_local.stack import free_port

    return {
        "PUSH_DELIVERY_QUEUE_URL": Transport.PUSH_DELIVERY,
        "PUSH_GONE_QUEUE_URL": Transport.PUSH_GONE,
        "PUSH_ENDPOINT": f"http://127.0.0.1:{free_port()}",
        "JWT_ISSUER": tokens.ISSUER,
        "JWT_AUDIENCE": tokens.AUDIENCE,
        "DISPATCH_JWT_SECRET": secrets.token_hex(32),
    }


def sampled(scenario: Scenario, worker_ids: list[str]) -> set[str]:
    """The workers whose phones hold a socket: a sample from the scenario's seed."""
    rng = random.Random(f"{scenario.seed}:push-sample")
    return set(rng.sample(sorted(worker_ids), scenario.workers.push_sample))


class Phones:
    """The sample's phones and the WebSocket API they connect to, on an event loop in a
    thread of its own: what each phone received, and when (the wall clock)."""

    def __init__(self, endpoint: str, subs: list[str], ttl_seconds: int) -> None:
        from dispatch_local.template import handler_of, websocket_api

        found = websocket_api()
        if found is None:
            raise RuntimeError("the template has no WebSocket API")
        self.api_functions = found
        # Loaded here, in the city's thread, as every handler of the run is.
        functions = [*found.routes.values(), *([found.authorizer] if found.authorizer else [])]
        self.handlers = {f.function: handler_of(f) for f in functions}
        self.port = int(endpoint.rsplit(":", 1)[1])
        self.subs, self.ttl_seconds = subs, ttl_seconds
        self.received: queue.SimpleQueue[tuple[str, str, float]] = queue.SimpleQueue()
        self.connected = 0
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="push-sample", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(300):
            raise RuntimeError("the push sample's phones did not connect in 5 minutes")
        if self._failure is not None:
            self.stop()
            raise RuntimeError(f"the push sample failed: {self._failure!r}") from self._failure

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)

    def heard(self) -> Iterator[tuple[str, str, float]]:
        """What the phones received since the last look: (worker, message, arrived)."""
        while True:
            try:
                yield self.received.get_nowait()
            except queue.Empty:
                return

    # -- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        from dispatch import db

        try:
            asyncio.run(self._main())
        except BaseException as error:  # the city's thread reports it
            self._failure = self._failure or error
        finally:
            db.close()  # this thread's connection ($connect, $disconnect)
            self._ready.set()

    async def _invoke(self, function: Any, event: dict[str, Any]) -> Any:
        """A route's function, in this thread, as Lambda invokes it (one at a time)."""
        from dispatch_local.events import LambdaContext

        context = LambdaContext(function_name=function.function, timeout_seconds=10)
        return self.handlers[function.function](event, context)

    async def _main(self) -> None:
        import uvicorn
        import websockets
        from starlette.applications import Starlette

        from dispatch_local import tokens
        from dispatch_local.websocket import LocalWebSocketApi

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        api = LocalWebSocketApi(self.api_functions, self._invoke)
        # The local stack's choice of implementation (dispatch_local.cli), and its warning.
        warnings.filterwarnings("ignore", "The `websockets` implementation is deprecated")
        config = uvicorn.Config(
            Starlette(routes=api.routes()),
            host="127.0.0.1",
            port=self.port,
            ws="websockets",
            log_level="warning",
            lifespan="off",
        )
        server = uvicorn.Server(config)
        serving = asyncio.create_task(server.serve())
        while not server.started:
            if serving.done():
                serving.result()  # why it could not listen
                raise RuntimeError("the push server stopped before it started")
            await asyncio.sleep(0.01)
        sockets: list[Any] = []
        listening: list[asyncio.Task[None]] = []
        address = f"ws://127.0.0.1:{self.port}/ws?token="

        async def listen(sub: str, socket: Any) -> None:
            with contextlib.suppress(websockets.ConnectionClosed):
                async for message in socket:
                    self.received.put((sub, str(message), time.time()))

        async def connect(sub: str) -> None:
            token = tokens.issue(sub, "worker", ttl_seconds=self.ttl_seconds)
            socket = await websockets.connect(address + token, open_timeout=60, max_queue=None)
            sockets.append(socket)
            listening.append(asyncio.create_task(listen(sub, socket)))

        try:
            for start in range(0, len(self.subs), 100):  # a hundred at a time, as bench.push
                await asyncio.gather(*(connect(sub) for sub in self.subs[start : start + 100]))
            self.connected = len(sockets)
        except BaseException as error:
            self._failure = error
        self._ready.set()
        if self._failure is None:
            await self._stop.wait()
        await asyncio.gather(*(s.close() for s in sockets), return_exceptions=True)
        await asyncio.gather(*listening, return_exceptions=True)
        await asyncio.sleep(0.2)  # the server's side of each close: $disconnect
        server.should_exit = True
        await serving


class PushSample:
    """The city's side of the sample: who is in it, what the bus offered them, what their
    sockets received, and the delays the rest are given."""

    def __init__(self, scenario: Scenario, worker_ids: list[str], endpoint: str) -> None:
        self.scenario = scenario
        self.members = sampled(scenario, worker_ids)
        # Tokens that outlive the run (its wall time, and an hour for the slow).
        ttl = int(scenario.seconds / scenario.speed) + 3600
        self.phones = Phones(endpoint, sorted(self.members), ttl)
        self.offered: dict[str, str] = {}  # offer event id -> job id, offers to the sample
        self.heard_ids: set[str] = set()
        self.delays: list[float] = []  # wall seconds, commit to the phone
        self.first_seen: dict[str, float] = {}  # job -> city seconds, first receipt on a phone
        self.rest_delays: list[float] = []
        self.rest_from_measured = 0
        self.rest_lost = 0
        self.first_heard_rest: dict[str, float] = {}  # job -> city seconds, first heard

    def start(self) -> None:
        from dispatch.push import delivery

        delivery.management.cache_clear()  # this run's endpoint, not an earlier run's
        self.phones.start()

    def stop(self) -> None:
        self.phones.stop()

    def holds(self, worker_id: str) -> bool:
        return worker_id in self.members

    def expect(self, event: dict[str, Any]) -> None:
        """An offer the bus carried to a sampled worker: its socket should receive it."""
        self.offered[event["id"]] = event["job_id"]

    def tell_rest(self, worker: Worker, job: Job, when: float) -> float | None:
        """A worker outside the sample: the delay they hear the offer after (None: lost)."""
        spec = self.scenario.workers
        if worker.rng.random() < spec.push_lost:
            self.rest_lost += 1
            return None
        if len(self.delays) >= MEASURED_ENOUGH:
            delay = worker.rng.choice(self.delays)
            self.rest_from_measured += 1
        else:
            delay = uniform(worker.rng, spec.notify_seconds)
        self.rest_delays.append(delay)
        heard = when + delay - job.created
        self.first_heard_rest[job.id] = min(heard, self.first_heard_rest.get(job.id, heard))
        return delay

    def received(self, city_time: Any, jobs: dict[str, Job]) -> Iterator[tuple[str, Any, float]]:
        """Each offer a sampled phone received since the last look, once: (worker, the
        offer's data, the city moment they hear it: its commit plus the measured delay)."""
        for sub, text, arrived in self.phones.heard():
            event = json.loads(text)
            if event.get("type") != "offer.created" or event["data"].get("worker_id") != sub:
                continue  # a job it holds: not what it hears offers by
            if event["id"] in self.heard_ids:
                continue
            self.heard_ids.add(event["id"])
            committed = datetime.fromisoformat(event["occurred_at"]).timestamp()
            delay = arrived - committed
            self.delays.append(delay)
            when = city_time(event["occurred_at"]) + delay
            job = jobs.get(event["job_id"])
            if job is not None:
                seen = when - job.created
                self.first_seen[job.id] = min(seen, self.first_seen.get(job.id, seen))
            yield sub, event["data"], when

    def settle(self) -> None:
        """After the run: a moment for what is still on its way, then the sockets closed."""
        deadline = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < deadline and len(self.heard_ids) < len(self.offered):
            time.sleep(0.1)


def figures(sample: PushSample) -> dict[str, Any]:
    """What the sample measured, beside what the model gives: delays in milliseconds of the
    wall clock, times to the first offer in seconds of the city's."""
    spec = sample.scenario.workers
    heard = len(sample.heard_ids & set(sample.offered))
    delays_ms = sorted(d * 1000 for d in sample.delays)
    return {
        "sample": len(sample.members),
        "connected": sample.phones.connected,
        "offers": len(sample.offered),
        "heard": heard,
        "lost": len(sample.offered) - heard,
        "delay_ms": percentiles(delays_ms) | {"max": delays_ms[-1] if delays_ms else None},
        "first_offer_seen_s": percentiles(list(sample.first_seen.values())),
        "jobs_seen": len(sample.first_seen),
        "rest": {
            "delay_s": percentiles(sample.rest_delays),
            "from_measured": sample.rest_from_measured,
            "from_model": len(sample.rest_delays) - sample.rest_from_measured,
            "lost": sample.rest_lost,
            "first_offer_heard_s": percentiles(list(sample.first_heard_rest.values())),
        },
        "model": {
            "notify_seconds": [spec.notify_seconds.low, spec.notify_seconds.high],
            "push_lost": spec.push_lost,
        },
    }


def kpis(sample: PushSample | None) -> dict[str, Any]:
    return {} if sample is None else {"push": figures(sample)}
