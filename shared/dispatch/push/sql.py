"""The SQL of push connections, each statement with the rule it keeps."""

from datetime import datetime
from typing import TypedDict
from uuid import UUID

from dispatch.db import Query


class ConnectParams(TypedDict):
    connection_id: str
    caller_id: str
    roles: list[str]
    token_expires_at: datetime


# A connection lasts no longer than the token that opened it, nor API Gateway's two-hour limit
# on a WebSocket connection (push_connections_expire). A repeated $connect changes nothing.
CONNECT: Query[ConnectParams, None] = Query("""
INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)
VALUES (%(connection_id)s, %(caller_id)s, %(roles)s,
        least(%(token_expires_at)s, now() + interval '2 hours'))
ON CONFLICT (connection_id) DO NOTHING
""")


class ForgetParams(TypedDict):
    connection_ids: list[str]


FORGET: Query[ForgetParams, None] = Query("""
DELETE FROM push_connections WHERE connection_id = ANY(%(connection_ids)s::text[])
""")


class DisconnectParams(TypedDict):
    connection_id: str
    caller_id: str


class DisconnectRow(TypedDict):
    last: bool


# A connection closed ($disconnect): its row goes (the expiry sweep may have taken it first);
# answers whether its caller has no other live connection (a worker's position then leaves the
# map until its next report: the socket is how the product knows a worker's app is there,
# docs/api.md "Version 1.3"). The caller is the connection's, from its authorizer.
DISCONNECT: Query[DisconnectParams, DisconnectRow] = Query("""
WITH gone AS (
  DELETE FROM push_connections WHERE connection_id = %(connection_id)s
)
SELECT NOT EXISTS (SELECT 1
                     FROM push_connections other
                    WHERE other.caller_id = %(caller_id)s
                      AND other.connection_id <> %(connection_id)s
                      AND other.expires_at > now()) AS last
""")


class RecipientsParams(TypedDict):
    job_id: UUID
    workers: list[str]
    job_event: bool
    version: int


class RecipientRow(TypedDict):
    connection_id: str
    expired: bool


# Who hears an event (the contract's "Push"): ops every event; a business every event of its
# own jobs (the owner never changes, so the jobs table says); a worker the offers made to it
# and every event of a job it holds, and the one that ends its hold: the change right after
# its version that leaves the job with no holder (released, reopened, cancelled), the very
# event a past holder reads last at GET /jobs/{id}/events (jobs/sql.py HOLD_ENDED). A
# takeover of a lapsed lease names the next holder, which a past holder never hears. Nobody
# else. Three branches, each on its own index (push_connections_ops, push_connections_caller):
# one WHERE of ORs with a sub-query scanned every connection for every event (28 ms at 100k
# rows; tests/integration/test_push.py holds the plan). Expired connections come back
# marked: they are closed instead of sent to.
RECIPIENTS: Query[RecipientsParams, RecipientRow] = Query("""
SELECT c.connection_id, c.expires_at <= now() AS expired
  FROM push_connections c
 WHERE 'ops' = ANY(c.roles)
UNION
SELECT c.connection_id, c.expires_at <= now()
  FROM jobs j
  JOIN push_connections c ON c.caller_id = j.business_id
 WHERE j.id = %(job_id)s AND 'business' = ANY(c.roles)
UNION
SELECT c.connection_id, c.expires_at <= now()
  FROM push_connections c
 WHERE 'worker' = ANY(c.roles)
   AND c.caller_id IN (
       SELECT unnest(%(workers)s::text[])
       UNION ALL
       SELECT h.data->>'assignee_id'
         FROM job_events n
         JOIN job_events h ON h.job_id = n.job_id AND h.version = n.version - 1
        WHERE %(job_event)s AND n.job_id = %(job_id)s AND n.version = %(version)s
          AND n.data->>'assignee_id' IS NULL)
 ORDER BY connection_id
""")


class LimitParams(TypedDict):
    limit: int


class ConnectionId(TypedDict):
    connection_id: str


# Stale entries expire: connections past their end, oldest first, a batch at a time.
EXPIRED: Query[LimitParams, ConnectionId] = Query("""
SELECT connection_id FROM push_connections
 WHERE expires_at <= now()
 ORDER BY expires_at
 LIMIT %(limit)s
""")
