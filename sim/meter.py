"""What a run costs the parts the bill sizes (`make cost`, sim/seed_bill.py): the CPU the
Postgres server spent, and the commands and bytes Redis handled. Both are read before and
after a run, from the servers this machine runs (the embedded ones, or REDIS_URL's and
DATABASE_URL's when they are local)."""

from pathlib import Path

import psycopg
import redis


def postgres_cpu_seconds(admin_url: str) -> float | None:
    """CPU seconds (user and system) the server's processes have used so far: the postmaster,
    the backends it has reaped and those still running. None when the server is not a process
    of this machine (its data directory unreadable here)."""
    import psutil

    try:
        with psycopg.connect(admin_url) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
        pid = int((Path(str(row[0])) / "postmaster.pid").read_text().split()[0]) if row else 0
        postmaster = psutil.Process(pid)
        own = postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        for child in postmaster.children(recursive=True):
            try:
                times = child.cpu_times()
            except psutil.NoSuchProcess:
                continue  # it ended meanwhile; its time is the postmaster's children's now
            total += times.user + times.system
    except (OSError, ValueError, psycopg.Error, psutil.Error):
        return None
    return total


def redis_counters(client: "redis.Redis") -> tuple[int, int]:
    """(commands processed, bytes in and out) since the server started: what ElastiCache
    Serverless bills as ECPUs (a simple command of up to 1 KB is one)."""
    stats = client.info("stats")
    return (
        int(stats["total_commands_processed"]),
        int(stats["total_net_input_bytes"]) + int(stats["total_net_output_bytes"]),
    )
