"""One simulation run per dispatch configuration, each on a fresh database and a fresh Redis,
the same seeded world every time; then the figures, the history checker's verdict, the report.

    dispatch simulate sim/scenarios/district.toml        (or: make simulate)
"""

import os
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
import redis

from dispatch.config.offer_policy import OfferPolicySettings
from dispatch.observability import logger
from dispatch_local.past import UUID7_AT
from sim import choosing, push
from sim.scenario import Dispatch, Scenario
from sim.state import fate, job_row, percentiles

if TYPE_CHECKING:
    from sim.city import City

# The product's settings that carry a duration, in the scenario's (real) seconds.
KEEP_POSITIONS_SECONDS = 3600


# How long a position counts (DISPATCH_LOCATION_FRESH_SECONDS) with each way of reporting:
# today's, a report every 30 s (120), and the rule's, every 5 minutes when still (the product's
# default now).
FRESH_BY_INTERVAL = 120
FRESH_BY_RULE = 360


def scaled_environment(scenario: Scenario, dispatch: Dispatch) -> dict[str, str]:
    """The product's durations divided by the speed, through its own settings (whole seconds,
    as they are in production: an SQS delay has no fraction)."""
    speed = scenario.speed

    def seconds(value: float, least: int = 1) -> str:
        return str(max(least, round(value / speed)))

    knobs = {
        f"DISPATCH_{name.upper()}": str(value)
        for name in (
            "offer_target",
            "offer_prior_accept",
            "offer_half_distance_m",
            "offer_decline_discount",
            "offer_idle_weight",
            "offer_floor_weight",
            "offer_min_size",
            "offer_max_size",
            "offer_reach_waves",
            "offer_market_min_answers",
        )
        if (value := getattr(dispatch, name)) is not None
    }
    knobs["DISPATCH_OFFER_HORIZON_SECONDS"] = seconds(dispatch.offer_horizon_seconds or 20)
    knobs["DISPATCH_OFFER_HISTORY_SECONDS"] = seconds(history_seconds(dispatch))
    knobs["DISPATCH_OFFER_FLOOR_SECONDS"] = seconds(
        dispatch.offer_floor_seconds
        or OfferPolicySettings.model_fields["offer_floor_seconds"].default
    )
    knobs["DISPATCH_OFFER_MARKET_REFIT_SECONDS"] = seconds(
        OfferPolicySettings.model_fields["offer_market_refit_seconds"].default
    )
    return knobs | {
        "DISPATCH_OFFER_POLICY": dispatch.offer_policy,
        "DISPATCH_OFFER_WAVES": dispatch.offer_waves,
        "DISPATCH_OFFER_WAVE_INTERVAL_SECONDS": seconds(dispatch.wave_interval_seconds, 0),
        "DISPATCH_OFFER_NEXT_WAVE_ON_DECLINES": str(dispatch.next_wave_on_declines).lower(),
        "DISPATCH_LEASE_SECONDS": seconds(dispatch.lease_seconds),
        # The sweeper's period as the city runs it: the market's fold waits for an offer to
        # settle (a lease and two periods), and a product that took the period for a minute of
        # wall time would fold nothing in a 40-minute run at 16x, its curve never standing.
        "DISPATCH_SWEEP_INTERVAL_SECONDS": seconds(dispatch.sweep_seconds),
        "DISPATCH_LOCATION_FRESH_SECONDS": seconds(
            dispatch.location_fresh_seconds
            or (FRESH_BY_INTERVAL if scenario.workers.reporting == "interval" else FRESH_BY_RULE)
        ),
        "DISPATCH_LOCATION_KEEP_SECONDS": seconds(KEEP_POSITIONS_SECONDS),
    }


def quiet_environment() -> None:
    """The handlers' logs and metrics are not what we measure. The layer's logger took its
    level when this module's imports loaded it, so it is set here as well (every wave and
    publication logged at INFO cost the simulator's one process a share of its core)."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "dispatch")
    logger.setLevel(os.environ["POWERTOOLS_LOG_LEVEL"])


@dataclass
class Outcome:
    dispatch: Dispatch
    kpis: dict[str, Any]
    requests: dict[str, dict[int, int]]
    violations: list[str]
    replay: list[dict[str, Any]]
    jobs: list[dict[str, Any]]
    extra: dict[str, Any] = field(default_factory=dict)


class Services:
    """Postgres, Redis and S3 for the runs: the machine's when DATABASE_URL / REDIS_URL say so,
    else embedded ones; a fresh database (and an emptied Redis) for every run."""

    def __init__(self, home: Path) -> None:
        from dispatch_local import embedded
        from dispatch_local.services import owner_url

        self.home = home
        home.mkdir(parents=True, exist_ok=True)  # a fresh clone has no .dispatch/sim yet
        self.admin = owner_url() or embedded.postgres(home / "pg", database="postgres")
        # The settings ask for a database before a run names its own (migrating it, say).
        os.environ.setdefault("DATABASE_URL", self.admin)
        self.redis_url = os.environ.get("REDIS_URL")
        if not os.environ.get("AWS_ENDPOINT_URL"):
            embedded.use_aws_stand_in(embedded.aws())
        embedded.ensure_bucket(os.environ["PHOTO_BUCKET"])

    @contextmanager
    def fresh(self) -> Iterator[tuple[str, str]]:
        from dispatch import db, migrations
        from dispatch_local import REPO_ROOT, embedded

        name = f"dispatch_sim_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        url = psycopg.conninfo.make_conninfo(self.admin, dbname=name)
        try:
            with db.connect(url) as conn:
                migrations.apply(conn, migrations.load(REPO_ROOT / "migrations"))
            if self.redis_url:
                from dispatch.config import settings
                from dispatch.workers import locations

                locations.forget_everyone(
                    locations.connect(self.redis_url, cluster=settings().redis_cluster)
                )
                yield url, self.redis_url
            else:
                folder = Path(tempfile.mkdtemp(prefix="redis-", dir=self.home))
                redis_url = embedded.redis(folder)
                try:
                    yield url, redis_url
                finally:  # its clients may still hold connections: it would outlive us
                    embedded.stop_redis(redis_url)
        finally:
            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# The world's past: the simulator's own setup, written straight into the run's fresh database
# (as its owner, before the first request), not through the product, which has no route for
# history. Only what the product itself records after a rated job: a worker's count of ratings
# and sum of stars (migrations/0010); the product computes the rating from them and reads it as
# it reads any other (the profile's reply, a job's min_rating, the applicants' list, the
# auto-pick). The jobs behind those ratings are not written: a worker's completed jobs count
# only those of the run.
WRITE_PAST = """
INSERT INTO workers (id, skills, ratings, stars) VALUES (%s, %s, %s, %s)
"""


# The offers the workers answered before the run (scenario `workers.prior_offers`), as the
# product would have recorded them: one past job per offer, open at version 1 when offered
# (job_offers_only_while_open), then its answer (a decline, or `job.assigned` to the worker and
# what became of it: released, its lease ran out, or nothing more) and its end (cancelled: it
# never comes back to the market). Every event is marked published: it was on the bus before
# the run, and the relay must not send it again.
WRITE_PAST_OFFERS: list[str] = [
    """CREATE TEMP TABLE past ON COMMIT DROP AS
       SELECT p.*, now() - make_interval(secs => p.ago_s) AS offered_at
         FROM unnest(%(job_ids)s::uuid[], %(worker_ids)s::text[], %(distances)s::float8[],
                     %(ago_s)s::float8[], %(answer_s)s::float8[], %(answers)s::text[],
                     %(endings)s::text[], %(end_s)s::float8[], %(lat)s::float8[],
                     %(lng)s::float8[])
           AS p(job_id, worker_id, distance_m, ago_s, answer_s, answer, ending, end_s, lat, lng)""",
    """INSERT INTO jobs (id, business_id, lat, lng, window_start, window_end, created_at,
                         updated_at)
       SELECT job_id, 'biz-past', lat, lng, offered_at, offered_at + interval '1 hour',
              offered_at, offered_at FROM past""",
    UUID7_AT,
    # Each offer's id of its own time (uuid v7, as the product's would be): the sweeper's fold
    # takes offers by id, so that a market with a past has it folded at its first pass.
    """INSERT INTO job_offers (id, job_id, worker_id, job_version, wave, distance_m, created_at)
       SELECT pg_temp.uuid7_at(offered_at), job_id, worker_id, 1, 1, distance_m, offered_at
         FROM past""",
    """INSERT INTO job_declines (job_id, worker_id, declined_at)
       SELECT job_id, worker_id, offered_at + make_interval(secs => answer_s)
         FROM past WHERE answer = 'decline'""",
    """INSERT INTO job_events (job_id, version, type, actor, occurred_at, data, published_at,
                               relayed_at)
       SELECT job_id, version, type, actor, at, data, at, at FROM (
         SELECT job_id, 1 AS version, 'job.created' AS type, 'biz-past' AS actor,
                offered_at AS at, '{}'::jsonb AS data FROM past
         UNION ALL
         SELECT job_id, 2, 'job.assigned', worker_id, offered_at + make_interval(secs => answer_s),
                jsonb_build_object('assignee_id', worker_id) FROM past WHERE answer = 'accept'
         UNION ALL
         SELECT job_id, 3, ending, worker_id, offered_at + make_interval(secs => end_s / 2),
                '{}'::jsonb FROM past WHERE ending IS NOT NULL
         UNION ALL
         SELECT job_id, CASE WHEN answer <> 'accept' THEN 2 WHEN ending IS NULL THEN 3 ELSE 4 END,
                'job.cancelled', 'biz-past', offered_at + make_interval(secs => end_s),
                '{}'::jsonb FROM past
       ) e""",
    """UPDATE jobs j SET status = 'cancelled', version = e.version, updated_at = now()
         FROM (SELECT job_id, max(version) AS version FROM job_events
                WHERE job_id IN (SELECT job_id FROM past) GROUP BY job_id) e
        WHERE j.id = e.job_id""",
]


def past_offers(scenario: Scenario) -> dict[str, list[Any]]:
    """Each worker's answered offers before the run, drawn from their own seed and habits
    (the same draws whatever policy runs): the columns WRITE_PAST_OFFERS takes, in the
    database's seconds (the city's divided by the speed, as the product's durations are)."""
    import random

    from sim.world import plan_workers, uniform

    spec, speed = scenario.workers, scenario.speed
    span = history_seconds(scenario.dispatch)
    interval = scenario.dispatch.wave_interval_seconds
    reach = first_wave_reach_m(scenario)
    columns: dict[str, list[Any]] = {
        k: []
        for k in ("job_ids", "worker_ids", "distances", "ago_s", "answer_s", "answers",
                  "endings", "end_s", "lat", "lng")
    }  # fmt: skip
    assert spec.prior_offers is not None
    for plan in plan_workers(scenario):
        rng = random.Random(f"{scenario.seed}:past-offers:{plan.id}")
        for _ in range(round(uniform(rng, spec.prior_offers))):
            distance = rng.uniform(0, reach)
            ago = rng.uniform(3 * interval, span - interval)
            heard = rng.random() >= spec.push_lost
            seconds = (
                uniform(rng, spec.notify_seconds)
                + uniform(rng, spec.response_seconds) * plan.habit.pace
            )
            yes = heard and rng.random() < spec.accept.chance(distance, plan.habit.accept_top)
            ending = None
            if yes and rng.random() < plan.habit.no_show:
                ending = "job.reopened"
            elif yes and rng.random() < spec.release:
                ending = "job.released"
            answer = "accept" if yes else "decline" if heard else "silence"
            answered = seconds if heard else 0.0
            values = (
                str(uuid.UUID(int=rng.getrandbits(128), version=4)), plan.id, distance,
                ago / speed, answered / speed, answer, ending,
                (answered + 2 * interval) / speed, plan.home[0], plan.home[1],
            )  # fmt: skip
            for key, value in zip(columns, values, strict=True):
                columns[key].append(value)
    return columns


def history_seconds(dispatch: Dispatch) -> float:
    """How far back the `likely` policy reads answers, in the city's seconds: the scenario's,
    or the product's default."""
    default: int = OfferPolicySettings.model_fields["offer_history_seconds"].default
    return dispatch.offer_history_seconds or default


def first_wave_reach_m(scenario: Scenario) -> float:
    """The first wave's radius (DISPATCH_OFFER_WAVES' syntax: size@radius,...)."""
    first = scenario.dispatch.offer_waves.split(",")[0]
    return float(first.split("@")[1])


def write_past(scenario: Scenario, database_url: str) -> frozenset[str]:
    """The ratings the workers received before the run (scenario `workers.prior_ratings`) and
    the offers they answered (`workers.prior_offers`); nothing when the scenario has neither,
    as the marketplace then opens with the run. Returns the past jobs' ids (the history
    checker's `past_jobs`)."""
    from sim.world import plan_workers

    if scenario.workers.prior_ratings is not None:
        rows = [
            (plan.id, plan.skills, plan.past.ratings, plan.past.stars)
            for plan in plan_workers(scenario)
        ]
        with psycopg.connect(database_url) as conn, conn.cursor() as cursor:
            cursor.executemany(WRITE_PAST, rows)
    if scenario.workers.prior_offers is not None:
        columns = past_offers(scenario)
        with psycopg.connect(database_url) as conn:
            conn.execute(WRITE_PAST_OFFERS[0], columns)  # the one statement with parameters
            for statement in WRITE_PAST_OFFERS[1:]:
                conn.execute(statement)
        return frozenset(columns["job_ids"])
    return frozenset()


@contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """The run's settings, and the caller's back afterwards (the next run reads them)."""
    from dispatch_local import environment_restored

    with environment_restored(*values):
        os.environ.update(values)
        yield


def run_one(
    scenario: Scenario, dispatch: Dispatch, services: Services, progress_seconds: float = 0.0
) -> Outcome:
    from dispatch import db
    from dispatch.config import settings
    from dispatch.workers import locations
    from dispatch_local.services import app_url
    from sim.city import City
    from sim.transport import Transport

    with (
        services.fresh() as (database_url, redis_url),
        environment(
            {
                "DATABASE_URL": app_url(database_url),  # the functions' own role
                "REDIS_URL": redis_url,
                "OUTBOX_QUEUE_URL": Transport.OUTBOX,
                "OFFER_QUEUE_URL": Transport.OFFERS,
                **scaled_environment(scenario, dispatch),
                **push.environment(scenario),
            }
        ),
    ):
        past_jobs = write_past(scenario, database_url)
        settings.cache_clear()
        db.close()
        locations.client.cache_clear()
        transport = Transport(visibility_seconds=60 / scenario.speed, speed=scenario.speed)
        transport.install()
        try:
            city = City(scenario, dispatch, transport, progress_seconds)
            spent = servers_spent(database_url, redis_url)
            began = time.monotonic()
            city.run()
            wall = time.monotonic() - began
            city.servers = spent()
            if transport.bus.errors:
                raise RuntimeError(f"the simulation failed: {transport.bus.errors[0]}")
            from dispatch_local.history import check

            with db.connect(database_url) as conn:
                grace = 3 * dispatch.sweep_seconds / scenario.speed + 5
                violations = check(
                    city.history, conn, lease_grace_seconds=grace, past_jobs=past_jobs
                )
        finally:
            transport.uninstall()
            db.close()
    return Outcome(
        dispatch,
        kpis(scenario, city, wall, transport.dead_letters()),
        by_route(city),
        violations,
        city.replay,
        [job_row(job) for job in city.jobs.values()],
        extra={
            "jobs": list(city.jobs.values()),
            "epoch0": city.epoch0,
            "past_jobs": len(past_jobs),
        },
    )


def servers_spent(database_url: str, redis_url: str) -> Callable[[], dict[str, float | None]]:
    """A reading of what the servers have done so far; called, what they did since (sim/meter:
    the Postgres server's CPU seconds, Redis's commands and bytes). None where not measurable
    (a server not of this machine, a sharded cache)."""
    from dispatch.config import settings
    from sim import meter

    client = None if settings().redis_cluster else redis.Redis.from_url(redis_url)
    cpu0 = meter.postgres_cpu_seconds(database_url)
    commands0, bytes0 = meter.redis_counters(client) if client else (0, 0)

    def since() -> dict[str, float | None]:
        cpu = meter.postgres_cpu_seconds(database_url)
        commands, moved = meter.redis_counters(client) if client else (0, 0)
        return {
            "postgres_cpu_seconds": None if cpu is None or cpu0 is None else cpu - cpu0,
            "redis_commands": commands - commands0 if client else None,
            "redis_bytes": moved - bytes0 if client else None,
        }

    return since


def run(scenario: Scenario, home: Path, progress_seconds: float = 0.0) -> list[Outcome]:
    """Every configuration in turn; with `progress_seconds`, a line that often as each runs."""
    services = Services(home)
    outcomes = []
    for dispatch in scenario.configurations():
        if progress_seconds > 0:
            print(f"{dispatch.name}: running ({dispatch.offer_waves})", flush=True)
        outcomes.append(run_one(scenario, dispatch, services, progress_seconds))
    return outcomes


# -- the figures ----------------------------------------------------------------------------


def kpis(scenario: Scenario, city: "City", wall: float, dead_letters: int) -> dict[str, Any]:
    jobs = list(city.jobs.values())
    posted = len(jobs)
    filled = [j for j in jobs if j.filled]
    end = city.ended
    online = busy = 0.0
    for worker in city.workers.values():
        if worker.status in ("idle", "assigned", "working"):
            worker.online_total += end - worker.online_since
        if worker.status in ("assigned", "working"):
            worker.busy_total += end - worker.busy_since
        online += worker.online_total
        busy += worker.busy_total
    requests = sum(city.requests.values())
    errors = sum(n for (_, status), n in city.requests.items() if status >= 500)
    pairs = [(j.winner_m, j.nearest_idle_m) for j in filled if j.winner_m is not None]
    ratios = [w / max(n, 1.0) for w, n in pairs if n is not None]
    lags = sorted(city.lags)
    fates = Counter(fate(job_row(j)) for j in jobs)
    return {
        "jobs": posted,
        "city_seconds": end,  # the hours, and the drain's minutes if it had one
        "fill_rate": len(filled) / posted if posted else None,
        # One fate per job: unfilled means nobody ever took it.
        "unfilled_rate": fates["unfilled"] / posted if posted else None,
        "not_filled": {kind: fates[kind] for kind in ("cancelled", "expired", "waiting")},
        "completed": sum(j.end == "completed" for j in jobs),
        "cancelled": sum(j.end == "cancelled" for j in jobs),
        "expired": sum(j.end == "expired" for j in jobs),
        "time_to_first_offer_s": percentiles(
            [j.first_offer - j.created for j in jobs if j.first_offer is not None]
        ),
        "time_to_accept_s": percentiles(
            [j.first_assigned - j.created for j in filled if j.first_assigned is not None]
        ),
        "offers_per_filled_job": sum(j.offers for j in filled) / len(filled) if filled else None,
        "lost_races_per_filled_job": (
            sum(j.lost_races for j in filled) / len(filled) if filled else None
        ),
        "declines": sum(j.declines for j in jobs),
        "leases_run_out": sum(j.leases_lost for j in jobs),
        "time_to_fill_again_s": percentiles([s for j in jobs for s in j.refill_seconds]),
        "winner_distance_m": percentiles([w for w, _ in pairs]),
        "nearest_idle_at_creation_m": percentiles([n for _, n in pairs if n is not None]),
        "winner_over_nearest": percentiles(ratios),
        "utilisation": busy / online if online else None,
        "worker_online_hours": online / 3600,
        "requests": requests,
        "errors_5xx": errors,
        "dead_letters": dead_letters,
        "speed": end / wall if wall else None,
        "wall_seconds": wall,
        "requests_per_second": requests / wall if wall else None,
        "lag_s": percentiles(lags) | {"max": lags[-1] if lags else None},
        **choosing.kpis(city),
        **push.kpis(city.push),
        **fairness(city),
        "aws": usage(city),
    }


def gini(values: list[float]) -> float | None:
    """The Gini coefficient (0: everyone the same, near 1: one has all)."""
    ordered, n = sorted(values), len(values)
    total = sum(ordered)
    if n == 0 or total == 0:
        return None
    weighted = sum((i + 1) * v for i, v in enumerate(ordered))
    return (2 * weighted) / (n * total) - (n + 1) / n


def fairness(city: "City") -> dict[str, Any]:
    """How work spread over the workers who were online at some time in the run: the share
    who were never offered a job, and the Gini coefficient of jobs (won) per worker."""
    online = [w for w in city.workers.values() if w.online_total > 0 or w.status != "offline"]
    return {
        "workers_online": len(online),
        "never_offered_share": (
            sum(w.offered == 0 for w in online) / len(online) if online else None
        ),
        "gini_jobs_per_worker": gini([float(w.taken) for w in online]),
        "gini_offers_per_worker": gini([float(w.offered) for w in online]),
    }


def usage(city: "City") -> dict[str, Any]:
    """What the run asked of AWS, measured (sim/costs.py prices it): invocations and handler
    seconds per function, queue messages sent and receives, events put on the bus, and the
    position path's socket messages and stream puts (the busiest city second's for the
    shards), the records skipped as too old, the offers pulls that carried a position."""
    transport = city.transport
    stream = transport.positions
    return {
        "invocations": dict(city.invocations),
        "handler_seconds": {k: round(v, 3) for k, v in city.handler_seconds.items()},
        "sqs_sent": {url.rsplit("/", 1)[-1]: q.sent for url, q in transport.queues.items()},
        "sqs_receives": transport.deliveries,
        "events_put": transport.bus.put,
        "answer_bytes": dict(city.answer_bytes),
        **city.servers,
        "positions": {
            "socket_messages": city.socket_messages,
            "stream_puts": stream.put_count,
            "stream_refused": stream.refused,
            "stream_skipped": stream.put_count - city.positions_written,
            "peak_puts_per_second": max(city.puts_per_second.values(), default=0),
            "reads_with_position": city.reads_with_position,
        },
    }


def by_route(city: "City") -> dict[str, dict[int, int]]:
    routes: dict[str, dict[int, int]] = {}
    for (route, status), n in sorted(city.requests.items()):
        routes.setdefault(route, {})[status] = n
    return routes
