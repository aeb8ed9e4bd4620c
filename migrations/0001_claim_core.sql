-- The claim core: jobs, their events (audit trail and outbox), idempotency keys, workers.
-- Every rule the product promises is a named constraint here, so that no code path,
-- admin tool or future bug can store an illegal state. The application checks the same
-- rules first only to turn a constraint name into a sentence.

-- UUID version 7 (time-ordered, RFC 9562): 48 bits of Unix milliseconds, the version, then
-- 12 bits of sub-millisecond fraction (method 3) so ids made one after another sort in order,
-- then random bits. Postgres 18 has uuidv7(); 15-17 do not, so we carry our own.
CREATE FUNCTION dispatch_uuid7() RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE AS $$
  SELECT encode(
           int8send((floor(ms)::bigint << 16) | x'7000'::int | floor((ms - floor(ms)) * 4096)::int)
           || substring(uuid_send(gen_random_uuid()) FROM 9),
           'hex')::uuid
    FROM (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms) AS now_ms
$$;

CREATE TABLE workers (
    id          text PRIMARY KEY,                 -- the JWT `sub`
    skills      text[] NOT NULL DEFAULT '{}',
    rating      numeric(3, 2),                     -- null until rated
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workers_rating_range CHECK (rating BETWEEN 0 AND 5),
    CONSTRAINT workers_skills_no_nulls CHECK (array_position(skills, NULL) IS NULL)
);

CREATE TABLE jobs (
    id                uuid PRIMARY KEY DEFAULT dispatch_uuid7(),
    business_id       text NOT NULL,
    status            text NOT NULL DEFAULT 'open',
    version           integer NOT NULL DEFAULT 1,
    assignee_id       text,
    lat               double precision NOT NULL,
    lng               double precision NOT NULL,
    skills            text[] NOT NULL DEFAULT '{}',
    window_start      timestamptz NOT NULL,
    window_end        timestamptz NOT NULL,
    lease_expires_at  timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT jobs_status_valid
        CHECK (status IN ('open', 'assigned', 'in_progress', 'completed', 'cancelled')),
    CONSTRAINT jobs_version_positive CHECK (version > 0),
    -- An assignee exists exactly while the job is assigned or later (never for open/cancelled).
    CONSTRAINT jobs_assignee_iff_taken
        CHECK ((status IN ('assigned', 'in_progress', 'completed')) = (assignee_id IS NOT NULL)),
    -- The lease (check-in deadline) exists exactly while the job is assigned.
    CONSTRAINT jobs_lease_iff_assigned
        CHECK ((status = 'assigned') = (lease_expires_at IS NOT NULL)),
    CONSTRAINT jobs_window_ordered CHECK (window_start < window_end),
    CONSTRAINT jobs_lat_range CHECK (lat BETWEEN -90 AND 90),
    CONSTRAINT jobs_lng_range CHECK (lng BETWEEN -180 AND 180),
    CONSTRAINT jobs_skills_no_nulls CHECK (array_position(skills, NULL) IS NULL)
);

-- One live job per worker: nobody holds two assigned or in-progress jobs at once.
-- Accept checks this in its WHERE clause; under a race this index is the guard (WORKER_BUSY).
CREATE UNIQUE INDEX jobs_one_live_job_per_worker
    ON jobs (assignee_id) WHERE status IN ('assigned', 'in_progress');

-- The sweeper looks for assignments whose lease ran out.
CREATE INDEX jobs_lease_expiry ON jobs (lease_expires_at) WHERE status = 'assigned';

CREATE TABLE job_events (
    id            uuid PRIMARY KEY DEFAULT dispatch_uuid7(),
    job_id        uuid NOT NULL REFERENCES jobs (id),
    type          text NOT NULL,
    version       integer NOT NULL,
    actor         text NOT NULL,
    occurred_at   timestamptz NOT NULL DEFAULT now(),
    data          jsonb NOT NULL DEFAULT '{}',
    published_at  timestamptz,                    -- outbox: null until relayed
    CONSTRAINT job_events_type_valid CHECK (type ~ '^(job|offer)\.[a-z_]+$'),
    CONSTRAINT job_events_version_positive CHECK (version > 0),
    -- One change writes one event: a job's version identifies exactly one event.
    CONSTRAINT job_events_one_per_change UNIQUE (job_id, version)
);

-- The outbox relay scans only what is still unpublished.
CREATE INDEX job_events_unpublished ON job_events (occurred_at) WHERE published_at IS NULL;

CREATE TABLE idempotency_keys (
    principal    text NOT NULL,                   -- the caller's `sub`: keys never cross callers
    key          text NOT NULL,
    fingerprint  text NOT NULL,                   -- sha256 of method, route, path params, body
    status_code  integer,                         -- null only inside the transaction that claimed it
    body         text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, key),
    CONSTRAINT idempotency_keys_key_format CHECK (key ~ '^[!-~]{1,255}$'),
    CONSTRAINT idempotency_keys_status_range CHECK (status_code BETWEEN 200 AND 499)
);

CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
