-- The functions sign in as dispatch_app; migrations run as the schema's owner (whoever applies
-- them). dispatch_app reads and writes rows where the application does, and nothing else: no
-- DDL, no TRUNCATE, no DELETE but of expired idempotency keys, and UPDATE only of the columns
-- a command changes. The audit trail (job_events) can be appended to and marked delivered,
-- never rewritten; a job's place, skills, window and owner never change once posted.
-- Its timeouts and password are not set here: the migrator writes them from its settings at
-- every deploy (dispatch.roles), so they follow the configuration, not a file's history.
DO $$
BEGIN
    CREATE ROLE dispatch_app LOGIN;
EXCEPTION
    -- Roles belong to the server, not the database: another database on it (a second stage,
    -- a test run beside this one) may have made it first, or be making it now.
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

-- Postgres 15 and later already keep PUBLIC from creating in schema public; older ones do not.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO dispatch_app;

GRANT SELECT, INSERT ON jobs TO dispatch_app;
GRANT UPDATE (status, version, assignee_id, lease_expires_at, before_photo_id, after_photo_id,
              rating, updated_at)
    ON jobs TO dispatch_app;

GRANT SELECT, INSERT ON job_events TO dispatch_app;
GRANT UPDATE (relay_claimed_until, relayed_at, published_at) ON job_events TO dispatch_app;

GRANT SELECT, INSERT, DELETE ON idempotency_keys TO dispatch_app;
GRANT UPDATE (status_code, body) ON idempotency_keys TO dispatch_app;

GRANT SELECT, INSERT ON workers TO dispatch_app;
GRANT UPDATE (skills, ratings, stars, updated_at) ON workers TO dispatch_app;

GRANT SELECT, INSERT ON photos, offer_waves, job_offers, job_declines TO dispatch_app;

GRANT SELECT, INSERT ON offer_events TO dispatch_app;
GRANT UPDATE (published_at) ON offer_events TO dispatch_app;
