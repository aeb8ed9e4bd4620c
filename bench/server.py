"""A Postgres of the benchmark's own that counts what the database does: pg_stat_statements
loaded (database time per statement), pg_walinspect (the WAL written, record by record), and
nothing else running on it (no other database, no autovacuum), so that what the counters say
between two readings is the benchmark's work alone.

Made from this machine's PostgreSQL binaries (Debian's `postgresql-NN` package), in a folder
under .dispatch/, on a free port; stopped and removed afterwards. Where the binaries are
missing, there is none (the embedded Postgres has neither extension).
"""

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dispatch_local import home

SETTINGS = {
    "shared_preload_libraries": "pg_stat_statements",
    "pg_stat_statements.track_planning": "on",  # planning is database time too
    "pg_stat_statements.max": "10000",
    "autovacuum": "off",  # nothing but the benchmark writes WAL between two readings
    "max_connections": "200",
    "listen_addresses": "127.0.0.1",
    "fsync": "on",
    "synchronous_commit": "on",
}


def binaries() -> Path | None:
    """The newest installed PostgreSQL's bin folder with the two extensions, if any."""
    root = Path("/usr/lib/postgresql")
    if not root.is_dir():
        return None
    for version in sorted(root.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 0)[
        ::-1
    ]:
        lib = version / "lib"
        if (version / "bin" / "initdb").exists() and all(
            (lib / f"{ext}.so").exists() for ext in ("pg_stat_statements", "pg_walinspect")
        ):
            return version / "bin"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres_user(command: list[str]) -> list[str]:
    """initdb and postgres refuse to run as root: run them as the package's own user."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextmanager
def counting_postgres() -> Iterator[str | None]:
    """An admin URL of a fresh counting Postgres, or None where it cannot be made here."""
    bin_dir = binaries()
    if bin_dir is None or (os.geteuid() == 0 and not shutil.which("runuser")):
        yield None
        return
    parent = home() / "bench"
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="counting-pg-", dir=parent))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        folder.chmod(0o700)
    data, port = folder / "data", _free_port()
    subprocess.run(
        _as_postgres_user(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
            ]
        ),
        check=True,
        capture_output=True,
    )
    options = " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
    ctl = str(bin_dir / "pg_ctl")
    subprocess.run(
        _as_postgres_user(
            [
                ctl,
                "-D",
                str(data),
                "-w",
                "-l",
                str(folder / "log"),
                "-o",
                f"-p {port} -k {folder} {options}",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_postgres_user([ctl, "-D", str(data), "-m", "fast", "stop"]), capture_output=True
        )
        shutil.rmtree(folder, ignore_errors=True)
