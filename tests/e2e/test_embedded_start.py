"""Processes that start the same folder's embedded Postgres at once (`make -j2
evaluate-reporting` on a fresh clone, each run starting the simulator's server) all get it:
one inits and starts it, the others find it running. Before the lock, one of them read
another's half-written postmaster.pid and died."""

import multiprocessing
import signal
from multiprocessing.synchronize import Barrier
from pathlib import Path

import psutil

STARTERS = 3


def start(folder: Path, barrier: Barrier, answers: "multiprocessing.Queue[str]") -> None:
    """One process: ready, released with the others at once, then the folder's server."""
    import psycopg

    from dispatch_local import embedded

    barrier.wait(timeout=60)
    url = embedded.postgres(folder, database="race")
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT current_database()").fetchone()
    answers.put(row[0] if row else "")


def test_processes_starting_one_folders_server_at_once_all_get_it(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "pg"  # nothing there yet
    spawn = multiprocessing.get_context("spawn")
    barrier, answers = spawn.Barrier(STARTERS), spawn.Queue()
    starters = [spawn.Process(target=start, args=(folder, barrier, answers)) for _ in range(3)]
    try:
        for starter in starters:
            starter.start()
        for starter in starters:
            starter.join(timeout=120)
        assert [s.exitcode for s in starters] == [0] * STARTERS
        assert sorted(answers.get(timeout=5) for _ in starters) == ["race"] * STARTERS
    finally:
        # pgserver stops the server when its last user exits, but users exiting at the same
        # moment can each count another still there: stop what is left of this test's.
        for process in psutil.process_iter(["cmdline"]):
            if str(folder) in " ".join(process.info["cmdline"] or []):
                process.send_signal(signal.SIGINT)
