"""The SQL of push connections, each statement with the rule it keeps."""

from typing import LiteralString

# A connection lasts no longer than the token that opened it, nor API Gateway's two-hour limit
# on a WebSocket connection (push_connections_expire). A repeated $connect changes nothing.
CONNECT: LiteralString = """
INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)
VALUES (%(connection_id)s, %(caller_id)s, %(roles)s,
        least(%(token_expires_at)s, now() + interval '2 hours'))
ON CONFLICT (connection_id) DO NOTHING
"""

FORGET: LiteralString = """
DELETE FROM push_connections WHERE connection_id = ANY(%(connection_ids)s::text[])
"""

# Who hears an event (the contract's "Push"): ops every event; a business every event of its
# own jobs (the owner never changes, so the jobs table says); a worker the offers made to it
# and every event of a job it holds, including the one that ends its hold (the assignee of
# the job's previous version). Nobody else. Expired connections come back marked: the sender
# closes them instead of sending.
RECIPIENTS: LiteralString = """
WITH heard_by AS (
    SELECT unnest(%(workers)s::text[]) AS worker_id
    UNION
    SELECT e.data->>'assignee_id' FROM job_events e
     WHERE %(job_event)s AND e.job_id = %(job_id)s AND e.version = %(version)s - 1
)
SELECT c.connection_id, c.expires_at <= now() AS expired
  FROM push_connections c
 WHERE 'ops' = ANY(c.roles)
    OR ('business' = ANY(c.roles)
        AND c.caller_id = (SELECT j.business_id FROM jobs j WHERE j.id = %(job_id)s))
    OR ('worker' = ANY(c.roles)
        AND c.caller_id IN (SELECT worker_id FROM heard_by WHERE worker_id IS NOT NULL))
 ORDER BY c.connection_id
"""

# Stale entries expire: connections past their end, oldest first, a batch at a time.
EXPIRED: LiteralString = """
SELECT connection_id FROM push_connections
 WHERE expires_at <= now()
 ORDER BY expires_at
 LIMIT %(limit)s
"""
