"""The outbox lag, read by the relay's schedule (a metric) and the ops summary: apart from the
relay, so that a read (the ops function) need not import the relay and its queue client."""

from dispatch.db import Connection
from dispatch.outbox import sql


def lag_seconds(conn: Connection) -> float:
    """Age of the oldest event not yet on the bus (0 when none waits): the outbox lag."""
    row = sql.RELAY_LAG.one(conn, None)
    return float(row["seconds"]) if row else 0.0
