"""Lambda SnapStart: what a snapshot of an initialised environment carries, and what it must
not (template.yaml turns SnapStart on for the API functions).

One snapshot is restored into many environments, so it must hold no connection (each restored
copy would share one socket's state, long since closed by the server) and no credential or
token that ages. The layer makes neither at init: connections are made on the first request
(db, workers.locations, aws). Nothing unique is made in Python before a snapshot either: job,
event and photo ids come from Postgres, idempotency keys from the clients.

Each module that holds a connection or imports a package on first use registers its own hook
with `before_snapshot`: it drops the connection and imports the package, so a restored
environment pays neither. So a function's snapshot carries what its routes use (redis only
where positions are read or written: the module that reads them is imported only there) and
nothing else.

The hooks are registered with snapshot-restore-py, which the Lambda Python runtime provides;
where it is absent (a plain interpreter), there is nothing to register with.
"""

from collections.abc import Callable

Hook = Callable[[], None]
try:
    from snapshot_restore_py import register_before_snapshot
except ImportError:  # not in Lambda's runtime: no snapshot will be taken
    register_before_snapshot = None


def before_snapshot(hook: Hook) -> Hook:
    """Run `hook` before the runtime takes the snapshot (a decorator)."""
    if register_before_snapshot is not None:
        register_before_snapshot(hook)
    return hook
