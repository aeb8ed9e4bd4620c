-- What the operations console reads: the event stream after a cursor, jobs in a box, and the
-- last hour's figures, each through an index, none through a full scan of the event history.

-- The event stream in an order no late commit can break. Ids and times are given before a
-- transaction commits, so a reader paging by id would skip a row whose transaction commits
-- after a later one (the outbox lesson). Each event row records its transaction's id; a
-- reader takes only rows of transactions older than every transaction still running
-- (pg_snapshot_xmin of its snapshot), ordered by (transaction, id): whatever it has not seen
-- yet can only come later in that order, never before its cursor.
ALTER TABLE job_events ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE offer_events ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX job_events_stream ON job_events (tx, id);
CREATE INDEX offer_events_stream ON offer_events (tx, id);

-- Live jobs in a box on the map.
CREATE INDEX jobs_live_by_place ON jobs (lat, lng) WHERE status IN ('open', 'assigned', 'in_progress');
-- Finished jobs in a box, recent first (the console shows the last hour's).
CREATE INDEX jobs_recently_finished ON jobs (updated_at) WHERE status IN ('completed', 'cancelled', 'expired');

-- The smallest UUID version 7 of a moment: ids made from then on are at least this, so "since
-- a moment" is a range of the primary key (ids are time-ordered), with no index of its own.
CREATE FUNCTION dispatch_uuid7_floor(at timestamptz) RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT encode(int8send((floor(extract(epoch FROM at) * 1000)::bigint << 16) | x'7000'::int)
                || '\x8000000000000000'::bytea, 'hex')::uuid
$$;
