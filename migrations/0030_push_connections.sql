-- Push (docs/architecture.md, "Push"): who is connected to the WebSocket API right now, so the
-- sender knows where an event goes. One row per open connection, written by the $connect
-- handler (after the authorizer verified the token) and removed by $disconnect, by the sender
-- when API Gateway says the connection is gone (410), or when it expires.
--
-- A connection never outlives its token (or API Gateway's two-hour limit): `expires_at` is the
-- earlier of the two, the sender never sends past it, and closes what passed it.
CREATE TABLE push_connections (
    connection_id text PRIMARY KEY,
    caller_id text NOT NULL,
    roles text[] NOT NULL,
    connected_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    -- API Gateway's own ids are short; anything long is not one of them.
    CONSTRAINT push_connections_id_shape CHECK (connection_id ~ '^[A-Za-z0-9_=+/-]{1,128}$'),
    CONSTRAINT push_connections_caller_present CHECK (length(btrim(caller_id)) > 0),
    -- Someone the sender can route to: at least one known role, no unknown one.
    CONSTRAINT push_connections_known_roles CHECK (
        cardinality(roles) > 0 AND roles <@ ARRAY['business', 'worker', 'ops']::text[]
    ),
    -- Stale entries expire: no connection is stored without an end, nor past API Gateway's
    -- two-hour limit on a WebSocket connection.
    CONSTRAINT push_connections_expire CHECK (
        expires_at > connected_at AND expires_at <= connected_at + interval '2 hours'
    )
);

-- The sender's look-up: the connections of one caller (a worker offered or holding a job, a
-- business owning it); ops connections through the roles index.
CREATE INDEX push_connections_caller ON push_connections (caller_id);
CREATE INDEX push_connections_ops ON push_connections (connection_id) WHERE 'ops' = ANY (roles);
-- The expiry sweep walks this.
CREATE INDEX push_connections_expires ON push_connections (expires_at);

-- The handlers add and remove rows, the sender reads and forgets them; none is ever updated.
GRANT SELECT, INSERT, DELETE ON push_connections TO dispatch_app;
