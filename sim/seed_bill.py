"""`make cost`: the monthly bill at the seed's load, line by line, for today's design and the
new one (issue 37 point 2).

    python -m sim.seed_bill [--runs DIR]    (make cost: runs the two cities first)

How. One city (sim/scenarios/cost.toml), the same world twice: its workers report today's
way (PUT /workers/me/location every 30 s, the seed's own rate) and by the rule (on 250 m
moved or every 5 minutes, on the socket, a read that carries the position counting). Each run
measures, per job posted and per hour a worker is online: invocations by function and their
handler milliseconds (this machine's, one process: an upper bound for Lambda's), the bytes of
the answers, socket messages, queue and bus traffic, the Postgres server's CPU seconds and
Redis's commands. The seed's month (SEED) multiplies each measure out; sim/prices.toml
(dated) prices it. What is assumed rather than measured is said beside each line.
"""

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.costs import prices

# The seed's load (docs/scaling.md, "The load"): 50k jobs a day, 100k workers online; the
# working day taken as 12 hours (the jobs in it, the workers online through it), 30 days.
SEED = {
    "jobs_a_day": 50_000,
    "workers_online": 100_000,
    "hours_a_day": 12,
    "days": 30,
    "busy_over_mean": 2.0,  # the business-hours profile's busiest hour over its mean
}
MONTH_HOURS = 730
DESIGNS = ("today", "new")

# Who drives each function's invocations: the workers online (their apps, hour by hour), the
# clock (the schedules), or the jobs (everything else: posting, waves, answers, events).
WORKER_DRIVEN = ("PUT /workers/me/location", "GET /workers/me/offers", "PositionStream")
# Once per worker per working day (its app sets its skills when it starts: the city's workers
# do it as they first come online).
PER_SHIFT = ("PUT /workers/me",)
SCHEDULED = ("LeaseSweeper", "OutboxRelay")
# What touches no Postgres (the share of the database's CPU each invocation gets: below).
NO_DATABASE = ("PUT /workers/me/location", "PositionStream")

HTTP_HEADER_BYTES = 400  # an HTTP API answer's status line and headers, about
PUSH_MESSAGE_BYTES = 700  # one event's envelope on the socket, about
ACCESS_LOG_BYTES = 300  # one JSON line of the HTTP API's access log (docs/scaling.md)
SOCKET_LOG_BYTES = 200  # one line of the WebSocket stage's access log
DEVICES_PER_EVENT = 2  # an event is heard by its business and one worker, about
KEEP_ALIVES_PER_HOUR = 60 / 9  # an idle socket's keep-alive: under API Gateway's 10 minutes
RECONNECTS_PER_HOUR = 0.5  # a connection lives two hours (the token's life)
RECONNECT_INVOCATIONS = 3  # the authorizer, $connect, $disconnect
CPU_PER_ACU = 0.25  # an ACU is 2 GiB with its share of CPU: 128 ACUs are 32 vCPUs
TARGET_CPU = 0.6  # the writer sized to run at most 60% busy in the busiest hour


@dataclass(frozen=True)
class Rates:
    """One design's measures from its run: per job posted, per worker-hour, per invocation."""

    per_job: dict[str, float]  # invocations by function
    per_worker_hour: dict[str, float]
    per_worker_shift: dict[str, float]
    ms: dict[str, float]  # handler milliseconds per invocation, by function
    answer_bytes_per_job: float
    answer_bytes_per_worker_hour: float
    socket_messages_per_worker_hour: float  # positions sent on the socket
    stream_records_per_worker_hour: float
    sqs_standard_per_job: float
    sqs_fifo_per_job: float
    events_per_job: float
    postgres_cpu_per_invocation: float  # seconds, over the invocations that reach Postgres
    redis_ecpu_per_job: float
    redis_ecpu_per_worker_hour: float


def rates(kpis: dict[str, Any]) -> Rates:
    """A run's measures (sim/run.py `kpis`), per job and per worker-hour."""
    aws = kpis["aws"]
    jobs, worker_hours = kpis["jobs"], kpis["worker_online_hours"]
    invocations: dict[str, int] = aws["invocations"]
    seconds: dict[str, float] = aws["handler_seconds"]
    answer_bytes: dict[str, int] = aws["answer_bytes"]

    def driven_by_workers(function: str) -> bool:
        return function in WORKER_DRIVEN

    per_job = {f: n / jobs for f, n in invocations.items()
               if not driven_by_workers(f) and f not in SCHEDULED + PER_SHIFT}  # fmt: skip
    per_worker_hour = {f: n / worker_hours for f, n in invocations.items() if driven_by_workers(f)}
    per_worker_shift = {f: invocations.get(f, 0) / kpis["workers_online"] for f in PER_SHIFT}
    sent: dict[str, int] = aws["sqs_sent"]
    fifo = sum(n for queue, n in sent.items() if queue.endswith(".fifo"))
    reaching_postgres = sum(n for f, n in invocations.items() if f not in NO_DATABASE)
    commands, transferred = aws["redis_commands"], aws["redis_bytes"]
    ecpu = max(commands, transferred / 1024)
    # Redis's work split by who drives it: the position writes (worker-driven) against the
    # waves' searches and the rest (job-driven), in proportion to their invocations' commands:
    # a report is about 3 commands (4 with a change of cell), a wave about 10 (its cells).
    worker_share = 3 * sum(per_worker_hour.get(f, 0.0) * worker_hours for f in NO_DATABASE)
    job_share = 10 * invocations.get("OfferQueue", 0)
    split = worker_share / (worker_share + job_share) if worker_share + job_share else 0.0
    return Rates(
        per_job=per_job,
        per_worker_hour=per_worker_hour,
        per_worker_shift=per_worker_shift,
        ms={f: 1000 * seconds.get(f, 0.0) / n for f, n in invocations.items() if n},
        answer_bytes_per_job=sum(b for f, b in answer_bytes.items() if not driven_by_workers(f))
        / jobs,
        answer_bytes_per_worker_hour=sum(b for f, b in answer_bytes.items() if driven_by_workers(f))
        / worker_hours,
        socket_messages_per_worker_hour=aws["positions"]["socket_messages"] / worker_hours,
        stream_records_per_worker_hour=aws["positions"]["stream_puts"] / worker_hours,
        sqs_standard_per_job=(sum(sent.values()) - fifo) / jobs,
        sqs_fifo_per_job=(fifo + 2 * aws["sqs_receives"]) / jobs,
        events_per_job=aws["events_put"] / jobs,
        postgres_cpu_per_invocation=aws["postgres_cpu_seconds"] / max(reaching_postgres, 1),
        redis_ecpu_per_job=ecpu * (1 - split) / jobs,
        redis_ecpu_per_worker_hour=ecpu * split / worker_hours,
    )


@dataclass(frozen=True)
class Line:
    item: str
    quantity: str
    dollars: float
    how: str


def tiered(count: float, tiers: list[tuple[float, float]]) -> float:
    """Dollars for `count` units priced per million in tiers [(up to how many, price)]."""
    dollars, below = 0.0, 0.0
    for ceiling, price in tiers:
        units = max(0.0, min(count, ceiling) - below)
        dollars += units * price / 1e6
        below = ceiling
    return dollars


def month(r: Rates, design: str, p: dict[str, Any]) -> list[Line]:
    """The seed's month for one design, line by line."""
    days, hours_a_day = SEED["days"], SEED["hours_a_day"]
    jobs = SEED["jobs_a_day"] * days
    worker_hours = SEED["workers_online"] * hours_a_day * days
    busy = SEED["busy_over_mean"]

    shifts = SEED["workers_online"] * days

    def count(function: str) -> float:
        return (
            r.per_job.get(function, 0.0) * jobs
            + r.per_worker_hour.get(function, 0.0) * worker_hours
            + r.per_worker_shift.get(function, 0.0) * shifts
        )

    functions = sorted(set(r.per_job) | set(r.per_worker_hour) | set(r.per_worker_shift))
    consumers = {"OutboxQueue", "OfferQueue", "PushDeliveryQueue", "PushGoneQueue",
                 "PositionStream"}  # fmt: skip
    http = sum(count(f) for f in functions if f not in consumers)
    schedule_runs = len(SCHEDULED) * p["schedules"]["per_hour"] * MONTH_HOURS
    keep_alives = KEEP_ALIVES_PER_HOUR * worker_hours if design == "today" else 0.0
    reconnects = RECONNECTS_PER_HOUR * worker_hours
    invocations = (
        sum(count(f) for f in functions)
        + schedule_runs
        + keep_alives
        + (RECONNECT_INVOCATIONS * reconnects)
    )
    lam = p["lambda"]
    gb_seconds = lam["memory_gb"] * (
        sum(count(f) * math.ceil(max(r.ms.get(f, 1.0), 1.0)) / 1000 for f in functions)
        + p["schedules"]["per_hour"] * MONTH_HOURS * p["schedules"]["relay_seconds"]
        + (keep_alives + RECONNECT_INVOCATIONS * reconnects) * 0.002  # 2 ms each, about
    )
    positions_in = r.socket_messages_per_worker_hour * worker_hours
    push_out = DEVICES_PER_EVENT * r.events_per_job * jobs
    socket_messages = positions_in + push_out + keep_alives
    ws = p["websocket"]
    records = r.stream_records_per_worker_hour * worker_hours
    busy_puts = records / (days * hours_a_day * 3600) * busy
    shards = max(1, math.ceil(busy_puts / 1000)) if records else 0
    kinesis = p["kinesis"]
    out_bytes = (
        r.answer_bytes_per_job * jobs
        + r.answer_bytes_per_worker_hour * worker_hours
        + HTTP_HEADER_BYTES * http
        + PUSH_MESSAGE_BYTES * push_out
    )
    transfer = p["data_transfer"]
    # Aurora: the busiest hour's CPU (the measured seconds per invocation that reaches
    # Postgres, times such invocations in that hour), at TARGET_CPU, in ACUs; the working day
    # at the mean (Serverless v2 follows the load), the night at the floor.
    reaching = sum(count(f) for f in functions if f not in NO_DATABASE)
    mean_cpu = r.postgres_cpu_per_invocation * reaching / (days * hours_a_day * 3600)
    aurora = p["aurora"]
    acus_mean = max(aurora["min_acu"], mean_cpu / TARGET_CPU / CPU_PER_ACU)
    acus_busy = max(aurora["min_acu"], busy * mean_cpu / TARGET_CPU / CPU_PER_ACU)
    acu_hours = acus_mean * hours_a_day * days + aurora["min_acu"] * (
        MONTH_HOURS - hours_a_day * days
    )
    cache = p["cache"]
    ecpus = r.redis_ecpu_per_job * jobs + r.redis_ecpu_per_worker_hour * worker_hours
    logs = p["logs"]
    fixed = p["fixed"]
    api_tiers = [(300e6, p["api_gateway"]["per_million_requests"]),
                 (math.inf, p["api_gateway"]["per_million_after_300m"])]  # fmt: skip
    ws_tiers = [(1e9, ws["per_million_messages"]), (math.inf, ws["per_million_after_1b"])]
    return [
        Line("HTTP API requests", f"{http / 1e6:,.0f} M", tiered(http, api_tiers),
             "every route the apps call, measured per job and per worker-hour"),
        Line("Lambda requests", f"{invocations / 1e6:,.0f} M",
             invocations * lam["per_million_requests"] / 1e6,
             "routes, consumers' batches, schedules, socket keep-alives and reconnects"),
        Line("Lambda duration", f"{gb_seconds / 1e6:,.1f} M GB-s",
             gb_seconds * lam["per_gb_second"],
             "measured ms per invocation (this machine: an upper bound), 512 MB"),
        Line("HTTP API access logs", f"{http * ACCESS_LOG_BYTES / 1e9:,.0f} GB",
             http * ACCESS_LOG_BYTES / 1e9 * logs["per_gb_ingested"],
             f"{ACCESS_LOG_BYTES} B a request"),
        Line("WebSocket connection-minutes", f"{worker_hours * 60 / 1e6:,.0f} M",
             worker_hours * 60 * ws["per_million_connection_minutes"] / 1e6,
             "every online worker's app holds its socket (push)"),
        Line("WebSocket messages", f"{socket_messages / 1e6:,.0f} M",
             tiered(socket_messages, ws_tiers),
             f"positions in {positions_in / 1e6:,.0f} M, push out {push_out / 1e6:,.0f} M"
             + (f", keep-alives {keep_alives / 1e6:,.0f} M" if keep_alives else
                " (positions keep the socket alive)")),
        Line("WebSocket access logs",
             f"{(socket_messages + 2 * reconnects) * SOCKET_LOG_BYTES / 1e9:,.0f} GB",
             (socket_messages + 2 * reconnects) * SOCKET_LOG_BYTES / 1e9
             * logs["per_gb_ingested"], f"{SOCKET_LOG_BYTES} B a message"),
        Line("Kinesis (position stream)", f"{shards} shards, {records / 1e6:,.0f} M puts",
             shards * MONTH_HOURS * kinesis["per_shard_hour"]
             + records * kinesis["per_million_put_units"] / 1e6,
             "shards for the busiest hour, 1,000 puts a second each"),
        Line("SQS requests", f"{(r.sqs_standard_per_job + r.sqs_fifo_per_job) * jobs / 1e6:,.0f} M",
             (r.sqs_standard_per_job * p["sqs"]["per_million_requests"]
              + r.sqs_fifo_per_job * p["sqs"]["per_million_fifo_requests"]) * jobs / 1e6,
             "sends, receives and deletes, measured per job"),
        Line("EventBridge events", f"{r.events_per_job * jobs / 1e6:,.0f} M",
             r.events_per_job * jobs * p["eventbridge"]["per_million_events"] / 1e6, ""),
        Line("data transfer out", f"{out_bytes / 1e9:,.0f} GB",
             max(0.0, out_bytes / 1e9 - transfer["free_gb"]) * transfer["per_gb"],
             "answers' bodies (measured) and headers, push messages; the first 100 GB free"),
        Line("Aurora writer", f"{acu_hours:,.0f} ACU-h ({acus_mean:.1f} ACU by day)",
             acu_hours * aurora["per_acu_hour"],
             f"{r.postgres_cpu_per_invocation * 1000:.2f} ms of Postgres CPU an invocation"
             f" (measured); busiest hour {acus_busy:.1f} ACU at {TARGET_CPU:.0%} busy"),
        Line("RDS Proxy", f"{max(aurora['proxy_min_acu'], acus_mean):.0f} ACU",
             MONTH_HOURS * max(aurora["proxy_min_acu"], acus_mean)
             * aurora["proxy_per_acu_hour"], "its 8-ACU minimum"),
        Line("ElastiCache Serverless", f"{ecpus / 1e9:,.1f} G ECPUs",
             MONTH_HOURS * cache["min_gb"] * cache["per_gb_hour"]
             + ecpus * cache["per_million_ecpu"] / 1e6,
             "commands and bytes measured (an ECPU a command or KB); storage at its minimum"),
        Line("fixed: endpoints, snapshots, keys, secrets, alarms", "",
             sum(fixed.values()), "docs/scaling.md, what a stage costs doing nothing"),
    ]  # fmt: skip


def table(lines: dict[str, list[Line]]) -> str:
    out = ["| item | today | new | new, how much | how |", "| --- | ---: | ---: | --- | --- |"]
    for old, new in zip(lines["today"], lines["new"], strict=True):
        out.append(f"| {old.item} | ${old.dollars:,.0f} | ${new.dollars:,.0f} |"
                   f" {new.quantity} | {new.how} |")  # fmt: skip
    totals = {d: sum(line.dollars for line in lines[d]) for d in DESIGNS}
    out.append(f"| **total** | **${totals['today']:,.0f}** | **${totals['new']:,.0f}** | | |")
    return "\n".join(out)


def per_thousand_filled(total: float, fill_rate: float) -> float:
    return total / (SEED["jobs_a_day"] * SEED["days"] * fill_rate) * 1000


def report(runs: dict[str, dict[str, Any]], p: dict[str, Any]) -> str:
    lines = {design: month(rates(runs[design]), design, p) for design in DESIGNS}
    totals = {d: sum(line.dollars for line in lines[d]) for d in DESIGNS}
    filled = {d: per_thousand_filled(totals[d], runs[d]["fill_rate"] or 1.0) for d in DESIGNS}
    return "\n".join([
        f"The seed's month at prices of {p['dated']} ({p['region']}): "
        f"{SEED['jobs_a_day']:,} jobs a day, {SEED['workers_online']:,} workers online"
        f" {SEED['hours_a_day']} hours a day, {SEED['days']} days.",
        "",
        table(lines),
        "",
        f"per 1,000 filled jobs: ${filled['new']:,.2f} (was ${filled['today']:,.2f})",
        f"seed's load per month: ${totals['new']:,.0f} (was ${totals['today']:,.0f})",
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="sim.seed_bill", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(__file__).parent / "runs" / "cost",
        help="the two runs' folder: today/ and new/ (make cost writes them)",
    )
    args = parser.parse_args(argv)
    found: dict[str, dict[str, Any]] = {}
    for design in DESIGNS:
        kpis_files = sorted((args.runs / design).glob("kpis-*.json"))
        if not kpis_files:
            sys.exit(f"no run in {args.runs / design}: run `make cost`")
        found[design] = json.loads(kpis_files[0].read_text())
    print(report(found, prices()))


if __name__ == "__main__":
    main()
