"""The simulated city running against the real dispatch.

Only the world is simulated: workers who move, report where they are, hear of offers, accept
or decline them, sometimes vanish; businesses who post, lose patience, rate. The dispatch is
the product's own, whole: every request runs the route's real handler as Lambda would (in
this process, one at a time, as one execution environment), on Postgres and Redis; the relay,
the publisher, the offer waves and the sweeper run as their queues and schedule call them;
the workers' position messages go on the socket's route into the position stream, whose
batches PositionsFunction writes to Redis as its event source mapping hands them over.

Time: the city's clock runs `speed` times faster than the wall clock. The product runs on the
wall clock (Postgres' `now()`), its durations divided by `speed` through its own settings;
the city converts every time it reads from the product back to its own. The run keeps pace
with its schedule when it can; how far behind it fell is part of the report.
"""

import gc
import heapq
import json
import math
import random
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dispatch.workers import locations
from dispatch_local import photos
from dispatch_local.events import LambdaContext
from dispatch_local.gateway import scheduled_event
from dispatch_local.history import History, Op, outcome_of
from dispatch_local.invoke import Api, Reply
from dispatch_local.template import handler_of, queue_consumers, schedules
from sim import choosing
from sim.push import PushSample
from sim.scenario import Dispatch, Scenario
from sim.state import Job, Worker, waiting
from sim.transport import Transport
from sim.world import (
    Arrival,
    distance_m,
    offset,
    plan_arrivals,
    plan_workers,
    report_clock,
    toward,
    uniform,
)

PHOTO = b"\xff\xd8\xff\xe0 a photo of the work"
POSITIONS_EVERY = 120.0  # seconds of city time between position frames in the replay
RELAY_PASS_EVERY = 2.0  # seconds of city time between passes of the catch-up relay
TURN_SECONDS = 30.0  # how often an idle worker walking about turns (up to 30 degrees)


def walk_about(worker: Worker, since: float, until: float, speed_mps: float) -> None:
    """An idle worker walking about from `since` to `until`: straight between turns that fall
    every TURN_SECONDS of city time, each drawn from the walk's own stream. Where the worker
    is depends on the time alone, not on how often the app (or the city) looked: a run that
    reports by the rule and one that reports every 30 s walk the same streets."""
    t = since
    while t < until:
        turn = (math.floor(t / TURN_SECONDS) + 1) * TURN_SECONDS
        leg = min(until, turn) - t
        step = speed_mps * leg
        worker.position = offset(
            worker.position,
            step * math.cos(math.radians(worker.heading)),
            step * math.sin(math.radians(worker.heading)),
        )
        t += leg
        if t >= turn:
            worker.heading += worker.walk.uniform(-30, 30)


class City:
    def __init__(
        self,
        scenario: Scenario,
        dispatch: Dispatch,
        transport: Transport,
        progress_seconds: float = 0.0,
    ) -> None:
        self.scenario, self.dispatch, self.transport = scenario, dispatch, transport
        self.progress_seconds = progress_seconds  # wall seconds between progress lines
        self.speed = scenario.speed
        self.api = Api()
        self.history = History()
        self.requests: Counter[tuple[str, int]] = Counter()
        # Per function (route, queue consumer, schedule): invocations and seconds spent in
        # the handler, for the bill (sim/costs.py).
        self.invocations: Counter[str] = Counter()
        self.handler_seconds: defaultdict[str, float] = defaultdict(float)
        self.answer_bytes: Counter[str] = Counter()  # answers' JSON bodies (data transfer out)
        self.servers: dict[str, float | None] = {}  # what Postgres and Redis spent (run.py)
        self.replay: list[dict[str, Any]] = []
        self.jobs: dict[str, Job] = {}
        self.favourites: dict[str, set[str]] = {}  # business -> its favourites (choosing.py)
        self.workers = {
            plan.id: Worker(
                plan,
                random.Random(f"{scenario.seed}:behaviour:{plan.id}"),
                random.Random(f"{scenario.seed}:walk:{plan.id}"),
                plan.home,
            )
            for plan in plan_workers(scenario)
        }
        self.arrivals = plan_arrivals(scenario)
        self.lags: list[float] = []
        self._heap: list[tuple[float, int, Callable[..., None], tuple[Any, ...]]] = []
        self.present = 0.0  # the city time the current action was planned for
        self.ended = scenario.seconds  # when the city stopped (later after a drain)
        self._seq = 0
        self._consumers = {c.queue: handler_of(c) for c in queue_consumers()}
        (sweeper,) = (s for s in schedules() if s.function == "LeaseSweeperFunction")
        self._sweeper, self._sweeper_function = handler_of(sweeper), sweeper
        (relay,) = (s for s in schedules() if s.function == "OutboxRelayFunction")
        self._relay, self._relay_function = handler_of(relay), relay
        # How the apps report where they are (scenario `workers.reporting`): by the rule, on
        # their sockets into the position stream; None, by PUT every `report_seconds`.
        self.rule = scenario.workers.rule if scenario.workers.reporting == "rule" else None
        self._positions = handler_of(transport.positions.consumer)
        self.socket_messages = 0  # position messages the sockets sent (API Gateway bills each)
        self.reads_with_position = 0  # offers pulls that carried the position (a report each)
        self.positions_written = 0  # stream records PositionsFunction was handed
        self.puts_per_second: Counter[int] = Counter()  # stream puts by city second (shards)
        transport.bus.observers.append(self.on_event)
        # Push over real sockets for a sample of the workers (sim/push.py): the publisher puts
        # deliveries on the delivery queue, whose poster (and the gone queue's sender) run as
        # the other consumers.
        self.push: PushSample | None = None
        self._queues = [("OutboxQueue", Transport.OUTBOX), ("OfferQueue", Transport.OFFERS)]
        if scenario.workers.push_sample:
            from dispatch.config.push import push_settings

            endpoint = push_settings().push_endpoint or ""
            self.push = PushSample(scenario, list(self.workers), endpoint)
            self._queues += [
                ("PushDeliveryQueue", Transport.PUSH_DELIVERY),
                ("PushGoneQueue", Transport.PUSH_GONE),
            ]
        for route in self.api.routes:  # loaded now, not on the run's first requests
            handler_of(route)

    # -- the clock ------------------------------------------------------------------------

    @property
    def epoch0(self) -> float:
        """The wall clock (Unix time) when the city's clock showed 0."""
        return self._epoch0

    def now(self) -> float:
        """City seconds since the run began, by the wall clock (what the product sees). The
        world plans from `present` instead: a run that falls behind must not drift."""
        return (time.monotonic() - self._wall0) * self.speed

    def city_time(self, moment: str) -> float:
        """A time the product wrote (RFC 3339, the wall clock) on the city's clock."""
        epoch = datetime.fromisoformat(moment).timestamp()
        return (epoch - self._epoch0) * self.speed

    def wall_iso(self, city_seconds: float) -> str:
        """The wall-clock moment (RFC 3339) at which the city's clock shows `city_seconds`."""
        epoch = self._epoch0 + city_seconds / self.speed
        return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")

    def at(self, when: float, action: Callable[..., None], *args: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (when, self._seq, action, args))

    # -- running --------------------------------------------------------------------------

    def run(self) -> None:
        if self.push is None:
            return self._run()
        self.push.start()  # the sample's phones connected before the clock starts
        try:
            self._run()
        finally:
            self.push.stop()

    def _run(self) -> None:
        self._epoch0 = time.time()
        self.profiles_known()
        self.already_out()  # before the clock starts: the run does not begin behind
        self._wall0, self._epoch0 = time.monotonic(), time.time()
        end = self.scenario.seconds
        for arrival in self.arrivals:
            self.at(arrival.at, self.post_job, arrival)
        for worker in self.workers.values():
            self.at(worker.plan.online_from, self.come_online, worker)
        self.at(0.0, self.sweep)
        self.at(0.0, self.relay)
        self.at(0.0, self.frame)
        # A long run's heap of plans and records would make every collection slower: what
        # exists now is kept out of the collector, and it runs less often.
        gc.freeze()
        gc.set_threshold(50_000, 20, 20)
        next_report = self._wall0 + self.progress_seconds
        last = end + 60 * self.scenario.drain_minutes
        unsettled: list[Job] | None = None  # in the drain: the jobs still without an outcome
        while self._heap and self._heap[0][0] < last:
            if self._heap[0][0] >= end:
                unsettled = [j for j in (unsettled or self.jobs.values()) if waiting(j)]
                if not unsettled:
                    break
            if self.progress_seconds > 0 and time.monotonic() >= next_report:
                print(self.progress_line(), flush=True)
                next_report = time.monotonic() + self.progress_seconds
            if self.push is not None:
                self.hear_pushed()
            when, _, action, args = self._heap[0]
            # Whatever comes first on the city's clock: a queue message falling due, or the
            # next thing a person does.
            due = self.transport.next_due()
            if due is not None and due <= self._wall0 + when / self.speed and self.deliver():
                continue
            planned = self._epoch0 + when / self.speed  # the stream stamps the wall's Unix time
            if self.transport.positions.ready(min(time.time(), planned)) and self.write_positions():
                continue
            late = self.now() - when
            if late < 0:
                time.sleep(min(-late / self.speed, 0.002))
                continue
            heapq.heappop(self._heap)
            self.lags.append(late)
            self.present = when
            action(*args)
        gc.unfreeze()
        self.ended = max(end, self.present)
        self.settle()

    def progress_line(self) -> str:
        """Where the run is: the city's clock, the speed it reached, requests a second, jobs."""
        wall = max(time.monotonic() - self._wall0, 1e-9)
        requests = sum(self.requests.values())
        filled = sum(job.filled for job in self.jobs.values())
        return (
            f"  {self.dispatch.name}: city {clock(self.present)} of {clock(self.scenario.seconds)},"
            f" {self.present / wall:.1f}x real time, {requests / wall:.0f} requests/s,"
            f" {len(self.jobs)} jobs posted, {filled} filled"
        )

    def settle(self) -> None:
        """After the last hour: the queues emptied and the sweeper run, so that the history
        can be checked against what the product finally holds."""
        for _ in range(2):
            self.sweep(again=False)
            self.relay(again=False)
            while self.deliver():
                pass
            while self.write_positions():
                pass
        if self.push is not None:  # what is still on its way is counted, too late to act on
            self.push.settle()
            for _ in self.push.received(self.city_time, self.jobs):
                pass

    def deliver(self) -> int:
        """Every message that is due, to its consumer (the publisher, the offer waves)."""
        moved = 0
        for queue, url in self._queues:
            while handled := self.transport.deliver(url, self._consume(queue)):
                moved += handled
        return moved

    def _consume(self, queue: str) -> Callable[[dict[str, Any]], Any]:
        handler = self._consumers[queue]

        def consume(event: dict[str, Any]) -> Any:
            began = time.perf_counter()
            try:
                return handler(event, LambdaContext(function_name=queue, timeout_seconds=10))
            finally:
                self.invocations[queue] += 1
                self.handler_seconds[queue] += time.perf_counter() - began

        return consume

    def write_positions(self) -> int:
        """The position stream's next batch to PositionsFunction, as the event source mapping
        hands it (records past their maximum age skipped unread); how many records it held."""
        stream = self.transport.positions
        batch = stream.take(time.time())
        if not batch:
            return 0
        context = LambdaContext(function_name="PositionsFunction", timeout_seconds=30)
        began = time.perf_counter()
        try:
            self._positions(stream.event(batch), context)
        finally:
            self.invocations["PositionStream"] += 1
            self.handler_seconds["PositionStream"] += time.perf_counter() - began
        self.positions_written += len(batch)
        return len(batch)

    def sweep(self, again: bool = True) -> None:
        context = LambdaContext(function_name="LeaseSweeperFunction", timeout_seconds=60)
        began = time.perf_counter()
        self._sweeper(scheduled_event(self._sweeper_function), context)
        self.invocations["LeaseSweeper"] += 1
        self.handler_seconds["LeaseSweeper"] += time.perf_counter() - began
        if again:
            self.at(self.present + self.dispatch.sweep_seconds, self.sweep)

    def relay(self, again: bool = True) -> None:
        """The catch-up relay (its own scheduled function): what no writer sent after its
        commit, the sweeper's job.reopened and job.expired above all, goes to the outbox
        queue. In AWS one run a minute makes a pass a second; here a pass every
        RELAY_PASS_EVERY seconds of the city's time."""
        context = LambdaContext(function_name="OutboxRelayFunction", timeout_seconds=60)
        began = time.perf_counter()
        self._relay(scheduled_event(self._relay_function), context)
        self.invocations["OutboxRelay"] += 1
        self.handler_seconds["OutboxRelay"] += time.perf_counter() - began
        if again:
            self.at(self.present + RELAY_PASS_EVERY, self.relay)

    def frame(self) -> None:
        """Where every online worker is, for the replay."""
        now = self.present
        rows = []
        for worker in self.workers.values():
            if worker.status in ("offline", "gone"):
                continue
            self.move(worker, now)
            rows.append([worker.id, round(worker.position[0], 6), round(worker.position[1], 6),
                         worker.status])  # fmt: skip
        self.replay.append({"t": round(now, 1), "type": "positions", "workers": rows})
        self.at(now + POSITIONS_EVERY, self.frame)

    # -- talking to the product ------------------------------------------------------------

    def call(
        self, route: str, method: str, path: str, who: tuple[str, str] | None, body: Any = None
    ) -> Reply:
        key = None if method == "GET" else str(random.getrandbits(64))
        op = self.history.invoke(
            Op(who[0] if who else "-", route, method, path, key, body, time.monotonic())
        )
        began = time.perf_counter()
        reply = self.api.call(method, path, who, body, key=key)
        function = f"{method} {_route_key(path)}"
        self.invocations[function] += 1
        self.handler_seconds[function] += time.perf_counter() - began
        if reply.body is not None:
            self.answer_bytes[function] += len(json.dumps(reply.body))
        op.completed_at, op.status = time.monotonic(), reply.status
        op.outcome, op.response = outcome_of(reply.status), reply.body
        self.requests[(f"{method} {_route_key(path)}", reply.status)] += 1
        return reply

    def upload_photo(self, worker: Worker) -> str | None:
        slot = self.call("photo", "POST", "/photos", worker.who, {"content_type": "image/jpeg"})
        if slot.status != 201:
            return None
        uploaded = photos.upload(slot.body, PHOTO)
        return str(slot.body["photo_id"]) if uploaded.status_code in (200, 204) else None

    # -- what the product tells the city (the bus) -------------------------------------------

    def on_event(self, kind: str, event: dict[str, Any]) -> None:
        when = self.city_time(event["occurred_at"])
        self.replay.append({"t": round(when, 1), **event})
        job = self.jobs.get(event["job_id"])
        data = event["data"]
        if kind == "job.created" and job is None:
            return  # a job posted before this run (not ours)
        if job is None:
            return
        if kind == "offer.created":
            job.offers += 1
            job.first_offer = job.first_offer if job.first_offer is not None else when
            worker = self.workers.get(data["worker_id"])
            if worker is not None:
                worker.offered += 1
                self.notify(worker, job, event, when)
            return
        if kind == "job.unfilled":
            job.unfilled, job.unfilled_at = True, when
            return
        if kind.startswith("application.") or kind == "job.back_to_choice":
            return  # the business reads its applicants when it looks (choosing.look)
        job.version, job.status = event["version"], data["status"]
        if kind == "job.assigned":
            if job.first_assigned is None:
                job.first_assigned, job.filled = when, True
            if job.reopened_at is not None:
                job.refill_seconds.append(when - job.reopened_at)
                job.reopened_at = None
            if job.choice:
                choosing.assigned(self, job, event, when)
        elif kind == "job.reopened":
            job.leases_lost += 1
            job.reopened_at = when
        elif kind in ("job.completed", "job.cancelled", "job.expired"):
            job.end = kind.removeprefix("job.")
            if kind == "job.completed":
                wait = uniform(random.Random(job.id), self.scenario.jobs.rating_minutes) * 60
                self.at(when + wait, self.rate, job)

    def notify(self, worker: Worker, job: Job, event: dict[str, Any], when: float) -> None:
        """How the worker hears of the offer: a sampled phone when its socket receives it
        (`hear_pushed`); any other after the modelled delay, unless the push is lost."""
        if self.push is None:
            if worker.rng.random() >= self.scenario.workers.push_lost:
                delay = uniform(worker.rng, self.scenario.workers.notify_seconds)
                self.at(when + delay, self.hear_of, worker, event["data"])
        elif self.push.holds(worker.id):
            self.push.expect(event)
        elif (after := self.push.tell_rest(worker, job, when)) is not None:
            self.at(when + after, self.hear_of, worker, event["data"])

    def hear_pushed(self) -> None:
        """The offers the sample's sockets received: each worker hears theirs at its commit
        plus the measured delay (sim/push.py says why not times the speed), which the city's
        clock has passed already; what they do next is planned from that moment."""
        assert self.push is not None
        present = self.present
        for worker_id, data, when in self.push.received(self.city_time, self.jobs):
            self.present = when
            self.hear_of(self.workers[worker_id], data)
        self.present = present

    # -- businesses ------------------------------------------------------------------------

    def post_job(self, arrival: Arrival) -> None:
        now = self.present
        body: dict[str, Any] = {
            "location": {"lat": arrival.location[0], "lng": arrival.location[1]},
            "skills": arrival.skills,
            "window": {
                "start": self.wall_iso(now + arrival.lead),
                "end": self.wall_iso(now + arrival.lead + arrival.window),
            },
        }
        if arrival.min_rating is not None:
            body["min_rating"] = arrival.min_rating
        choosing.before_posting(self, arrival.business)
        body.update(choosing.job_fields(self.dispatch.choosing, self.speed))
        reply = self.call("create", "POST", "/jobs", (arrival.business, "business"), body)
        if reply.status != 201:
            return
        job = Job(reply.body["id"], arrival, self.city_time(reply.body["created_at"]))
        job.nearest_idle_m = self.nearest_idle(arrival, now)
        self.jobs[job.id] = job
        choosing.posted(self, job)
        self.at(now + arrival.patience, self.lose_patience, job)

    def nearest_idle(self, arrival: Arrival, now: float) -> float | None:
        """How far the nearest idle, qualified worker was when the job was posted."""
        best = None
        for worker in self.workers.values():
            if worker.status != "idle" or not set(arrival.skills) <= set(worker.plan.skills):
                continue
            if arrival.min_rating is not None and (worker.rating or 0) < arrival.min_rating:
                continue
            self.move(worker, now)
            gap = distance_m(worker.position, arrival.location)
            best = gap if best is None or gap < best else best
        return best

    def lose_patience(self, job: Job) -> None:
        who = (job.arrival.business, "business")
        seen = self.call("read", "GET", f"/jobs/{job.id}", who)
        if seen.status == 200 and seen.body["status"] == "open":
            body = {"event": "cancel", "version": seen.body["version"]}
            self.call("transition", "POST", f"/jobs/{job.id}/transitions", who, body)

    def rate(self, job: Job) -> None:
        rng = random.Random(f"{self.scenario.seed}:stars:{job.id}")
        stars = rng.choices(range(1, 6), weights=self.scenario.jobs.stars)[0]
        reply = self.call(
            "rate", "POST", f"/jobs/{job.id}/rating", (job.arrival.business, "business"),
            {"stars": stars},
        )  # fmt: skip
        if reply.status == 201 and (worker := self.workers.get(reply.body["worker_id"])):
            # The worker's app refreshes the profile, which carries the new rating.
            profile = self.call("profile", "PUT", "/workers/me", worker.who,
                                {"skills": worker.plan.skills})  # fmt: skip
            if profile.status == 200:
                worker.rating = profile.body["rating"]

    # -- workers ---------------------------------------------------------------------------

    def come_online(self, worker: Worker) -> None:
        now = self.present
        if not worker.profiled:
            body = {"skills": worker.plan.skills}
            profile = self.call("profile", "PUT", "/workers/me", worker.who, body)
            if profile.status == 200:  # their rating, when the world has a past (run.py)
                worker.rating = profile.body["rating"]
            worker.profiled = True
        worker.status, worker.online_since, worker.moved_at = "idle", now, now
        worker.heading = worker.walk.uniform(0, 360)
        first = now
        if now == 0:
            # Out before the run began: their phones report on their own clocks, not all at
            # the first second (which made every report period one burst the run fell behind
            # on), and their last report was one period before the next (already_out).
            first = self.first_report(worker)
            worker.reported_at, worker.reported_where = first - self.period, worker.position
        if self.rule is not None:
            self.plan_look(worker, first)  # due at the first look (a period, or never)
        elif now == 0:
            self.at(first, self.report, worker)
        else:
            self.report(worker)
        self.at(now + self.pull_gap(worker), self.pull, worker)
        self.at(max(now, worker.plan.online_until), self.go_offline, worker)

    def go_offline(self, worker: Worker) -> None:
        if worker.status in ("assigned", "working"):
            self.at(self.present + 600, self.go_offline, worker)  # after the job in hand
            return
        if worker.status == "idle":
            worker.online_total += self.present - worker.online_since
            worker.status = "offline"
            if self.rule is not None:  # the app closed its socket: $disconnect forgets it
                locations.forget(worker.id)

    def pull_gap(self, worker: Worker) -> float:
        return worker.rng.expovariate(1 / (self.scenario.workers.pull_minutes * 60))

    def move(self, worker: Worker, now: float) -> None:
        """Where the worker is by `now`: walking about, or on the way somewhere."""
        spec = self.scenario.workers
        elapsed, worker.moved_at = now - worker.moved_at, now
        if elapsed <= 0 or worker.status in ("working", "offline", "gone"):
            return
        if worker.target is not None:
            stride = spec.travel_speed_mps * elapsed
            worker.position = toward(worker.position, worker.target, stride)
            if worker.position == worker.target and worker.status == "idle":
                worker.target = None
            return
        walk_about(worker, now - elapsed, now, spec.idle_speed_mps)

    @property
    def period(self) -> float:
        """How often an app reports at the least: its interval, or the rule's heartbeat."""
        return self.scenario.workers.report_seconds if self.rule is None else self.rule.seconds

    def first_report(self, worker: Worker) -> float:
        """When a worker out before the run reports first (`report_clock`)."""
        return report_clock(self.scenario, worker.id, self.period)

    def profiles_known(self) -> None:
        """Workers with a past (scenario `prior_ratings`, written before the run) have their
        profile already: their apps set no skills again, and the city learns their ratings
        from the product's table (a hundred thousand PUTs would be the run's first minutes)."""
        from dispatch import db

        rows = db.run(lambda conn: conn.execute(
            "SELECT id, rating::float8 AS rating FROM workers").fetchall())  # fmt: skip
        for row in rows:
            worker = self.workers.get(row["id"])
            if worker is not None:
                worker.profiled, worker.rating = True, row["rating"]

    def already_out(self) -> None:
        """The workers out before the run are on the map when it begins: each one's last
        report, one period before its first in the run, written as its app sent it then (one
        batch: a city of 100,000 would spend minutes on them one by one)."""
        locations.report_many(
            locations.Report(
                worker.id,
                *worker.plan.home,
                self._epoch0 + (self.first_report(worker) - self.period) / self.speed,
            )
            for worker in self.workers.values()
            if worker.plan.online_from == 0
        )

    def report(self, worker: Worker) -> None:
        """Reporting by interval: PUT /workers/me/location every `report_seconds`."""
        if worker.status in ("offline", "gone"):
            return
        now = self.present
        self.move(worker, now)
        where = {"lat": worker.position[0], "lng": worker.position[1]}
        self.call("location", "PUT", "/workers/me/location", worker.who, where)
        self.at(now + self.scenario.workers.report_seconds, self.report, worker)

    def top_speed(self, worker: Worker) -> float:
        """The fastest the worker may move until something changes its pace (`move`)."""
        spec = self.scenario.workers
        if worker.status in ("working", "offline", "gone"):
            return 0.0
        if worker.target is not None:  # and once there, about again
            return max(spec.travel_speed_mps, spec.idle_speed_mps)
        return spec.idle_speed_mps

    def plan_look(self, worker: Worker, at: float | None = None) -> None:
        """The app's next look at where it is (by the rule): at `at`, or when the rule could
        fall due at the worker's pace; the look planned before is void. Called again whenever
        the pace quickens (a job taken, one finished), so that no look comes too late."""
        assert self.rule is not None
        if at is None:
            moved = self.moved_since_report(worker)
            at = self.present + self.rule.wait(
                self.present - worker.reported_at, moved, self.top_speed(worker)
            )
        worker.look += 1
        self.at(at, self.look, worker, worker.look)

    def moved_since_report(self, worker: Worker) -> float:
        if worker.reported_where is None:
            return math.inf
        return distance_m(worker.reported_where, worker.position)

    def look(self, worker: Worker, which: int) -> None:
        """The app looks at where it is: a position message when the rule says one is due."""
        assert self.rule is not None
        if which != worker.look or worker.status in ("offline", "gone"):
            return
        now = self.present
        self.move(worker, now)
        if self.rule.due(now - worker.reported_at, self.moved_since_report(worker)):
            self.send_position(worker)
        self.plan_look(worker)

    def send_position(self, worker: Worker) -> None:
        """{"action": "position", ...} on the worker's socket: API Gateway's route holds it to
        its model and puts it on the position stream, the partition key from the connection's
        authorizer (no Lambda, no HTTP request)."""
        now = self.present
        lat, lng = worker.position
        message = json.dumps({"action": "position", "lat": lat, "lng": lng})
        self.socket_messages += 1
        refused = self.transport.positions.put(
            message, {"principalId": worker.id, "roles": "worker"}
        )
        if refused is None:
            self.puts_per_second[int(now)] += 1
        worker.reported_at, worker.reported_where = now, worker.position

    def pull(self, worker: Worker) -> None:
        """The app opened: the worker's offers (the truth behind a lost notification). By the
        rule, the pull carries where the worker is, and is a report that restarts the rule."""
        if worker.status in ("offline", "gone"):
            return
        now = self.present
        if worker.status == "idle":
            path = "/workers/me/offers"
            if self.rule is not None:
                self.move(worker, now)
                path += "?lat={!r}&lng={!r}".format(*worker.position)
            reply = self.call("offers", "GET", path, worker.who)
            if self.rule is not None and reply.status == 200:
                self.reads_with_position += 1
                worker.reported_at, worker.reported_where = now, worker.position
                self.plan_look(worker)
            for offer in reply.body.get("offers", []) if reply.status == 200 else []:
                if offer["job"]["id"] not in worker.seen_offers:
                    self.hear_of(worker, {"job": offer["job"], "distance_m": offer["distance_m"]})
        self.at(now + self.pull_gap(worker), self.pull, worker)

    def hear_of(self, worker: Worker, offer: dict[str, Any]) -> None:
        job_id = offer["job"]["id"]
        if job_id in worker.seen_offers:
            return
        worker.seen_offers.add(job_id)
        wait = uniform(worker.rng, self.scenario.workers.response_seconds) * worker.plan.habit.pace
        self.at(self.present + wait, self.decide, worker, offer)

    def decide(self, worker: Worker, offer: dict[str, Any]) -> None:
        job = self.jobs.get(offer["job"]["id"])
        if job is None:
            return
        now = self.present
        self.move(worker, now)
        where = (offer["job"]["location"]["lat"], offer["job"]["location"]["lng"])
        gap = distance_m(worker.position, where)
        chance = self.scenario.workers.accept.chance(gap, worker.plan.habit.accept_top)
        if worker.status != "idle" or worker.rng.random() >= chance:
            job.declines += 1
            self.call("decline", "POST", f"/jobs/{job.id}/decline", worker.who, {})
            return
        if job.choice:
            return choosing.apply(self, worker, job)  # the business chooses
        body = {"version": offer["job"]["version"]}
        reply = self.call("accept", "POST", f"/jobs/{job.id}/accept", worker.who, body)
        if reply.status != 200:
            if reply.code == "JOB_TAKEN":
                job.lost_races += 1
            return
        self.take(worker, job, reply.body, now)

    def take(self, worker: Worker, job: Job, held: dict[str, Any], now: float) -> None:
        spec = self.scenario.workers
        worker.status, worker.job, worker.busy_since = "assigned", job, now
        worker.taken += 1
        worker.version = held["version"]
        job.winner_m = distance_m(worker.position, job.arrival.location)
        job.assignee, job.assignee_rating = worker.id, worker.rating
        if worker.rng.random() < worker.plan.habit.no_show:
            worker.status = "gone"  # never heard from again: the lease will run out
            worker.online_total += now - worker.online_since
            return
        worker.target = job.arrival.location
        if self.rule is not None:
            self.plan_look(worker)  # on the way now: the metres come sooner
        travel = job.winner_m / spec.travel_speed_mps
        if worker.rng.random() < spec.release:
            self.at(now + worker.rng.uniform(0, travel), self.give_back, worker)
        else:
            self.at(now + travel, self.arrive, worker)
        self.at(now + self.dispatch.lease_seconds / 2, self.check_in, worker, job.id)

    def transition(self, worker: Worker, event: str) -> Reply:
        job = worker.job
        assert job is not None
        body = {"event": event, "version": worker.version}
        reply = self.call("transition", "POST", f"/jobs/{job.id}/transitions", worker.who, body)
        if reply.status == 200:
            worker.version = reply.body["version"]
        return reply

    def check_in(self, worker: Worker, job_id: str) -> None:
        if worker.status != "assigned" or worker.job is None or worker.job.id != job_id:
            return
        if self.transition(worker, "check_in").status == 200:
            self.at(self.present + self.dispatch.lease_seconds / 2, self.check_in, worker, job_id)
        else:
            self.free(worker)  # fenced off: the lease ran out and the job moved on

    def give_back(self, worker: Worker) -> None:
        if worker.status == "assigned":
            self.transition(worker, "release")
            self.free(worker)

    def arrive(self, worker: Worker) -> None:
        if worker.status != "assigned" or worker.job is None:
            return
        now = self.present
        self.move(worker, now)
        photo = self.upload_photo(worker)
        attached = self.call(
            "attach", "PUT", f"/jobs/{worker.job.id}/photos/before", worker.who,
            {"photo_id": photo},
        )  # fmt: skip
        if attached.status != 200:
            self.free(worker)
            return
        worker.version = attached.body["version"]
        if self.transition(worker, "start").status != 200:
            self.free(worker)
            return
        worker.status = "working"
        self.at(now + worker.job.arrival.work, self.finish, worker)

    def finish(self, worker: Worker) -> None:
        job = worker.job
        assert job is not None
        photo = self.upload_photo(worker)
        attached = self.call(
            "attach", "PUT", f"/jobs/{job.id}/photos/after", worker.who, {"photo_id": photo}
        )
        if attached.status == 200:
            worker.version = attached.body["version"]
            self.transition(worker, "complete")
        self.free(worker)

    def free(self, worker: Worker) -> None:
        now = self.present
        worker.busy_total += now - worker.busy_since
        worker.status, worker.job, worker.moved_at = "idle", None, now
        worker.target = worker.plan.home if self.scenario.workers.return_home else None
        if self.rule is not None:
            self.plan_look(worker)


def clock(seconds: float) -> str:
    """City seconds as h:mm:ss."""
    whole = int(seconds)
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _route_key(path: str) -> str:
    """/jobs/0193.../accept -> /jobs/{job_id}/accept (the template's form)."""
    parts = path.split("?")[0].split("/")
    named = ["{job_id}" if len(p) == 36 and p.count("-") == 4 else p for p in parts]
    if len(named) > 4 and named[3] == "photos":
        named[4] = "{slot}"
    return "/".join(named)
