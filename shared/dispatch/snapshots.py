"""Lambda SnapStart: what a snapshot of an initialised environment carries, and what it must
not (template.yaml turns SnapStart on for the API functions).

One snapshot is restored into many environments, so it must hold no connection (each restored
copy would share one socket's state, long since closed by the server) and no credential or
token that ages. The layer makes neither at init: connections are made on the first request
(db, workers.locations, aws). Before the snapshot, this module imports what those paths import
lazily (boto3, redis), so a restored environment pays neither, and drops any connection that
init opened after all. Nothing unique is made in Python before a snapshot either: job, event
and photo ids come from Postgres, idempotency keys from the clients.

The hooks are registered with snapshot-restore-py, which the Lambda Python runtime provides;
where it is absent (a plain interpreter), there is nothing to register with.
"""

import importlib

from dispatch import aws, db
from dispatch.workers import locations

# Imported on first use by the request paths (not at cold start), so into the snapshot here.
LAZY_IMPORTS = ("boto3", "redis")


def before_snapshot() -> None:
    for module in LAZY_IMPORTS:
        importlib.import_module(module)
    db.close()
    if locations.client.cache_info().currsize:
        locations.client().close()
    locations.client.cache_clear()
    aws.client.cache_clear()


try:
    from snapshot_restore_py import register_before_snapshot
except ImportError:  # not in Lambda's runtime: no snapshot will be taken
    pass
else:
    register_before_snapshot(before_snapshot)
