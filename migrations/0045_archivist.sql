-- History leaves the hot tables on purpose (issue 35; docs/retention.md): the retention duty
-- (dispatch.retention) exports a finished job with every row of it to the archive bucket,
-- then deletes exactly those rows. It signs in as dispatch_archivist, which may read and
-- delete the history it retires and nothing else: no INSERT or UPDATE anywhere, no live state
-- (workers, rosters, idempotency keys, the market, push connections). dispatch_app still may
-- not delete history (0015). Its timeouts and password are written by the migrator at every
-- deploy (dispatch.roles), as the application role's are.
DO $$
BEGIN
    CREATE ROLE dispatch_archivist LOGIN;
EXCEPTION
    -- Roles belong to the server, not the database (see 0015).
    WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

GRANT USAGE ON SCHEMA public TO dispatch_archivist;
GRANT SELECT, DELETE
    ON jobs, job_events, offer_events, job_offers, offer_waves, job_declines, job_applications,
       photos
    TO dispatch_archivist;

-- Whoever deletes (the archivist, or the owner by hand), the live product keeps what it
-- needs: a job leaves only once finished, so an open or held job is never archived
-- (jobs_deleted_only_when_finished); an event leaves only once on the bus, so nothing
-- is lost from the outbox (job_events_deleted_only_when_published,
-- offer_events_deleted_only_when_published). TRUNCATE (tests, the owner) bypasses them.
CREATE FUNCTION jobs_deleted_only_when_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job % is %: only a finished job leaves', OLD.id, OLD.status
        USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_deleted_only_when_finished';
END
$$;
CREATE TRIGGER jobs_deleted_only_when_finished BEFORE DELETE ON jobs
    FOR EACH ROW WHEN (OLD.status NOT IN ('completed', 'cancelled', 'expired'))
    EXECUTE FUNCTION jobs_deleted_only_when_finished();

CREATE FUNCTION events_deleted_only_when_published() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'event % is not published yet: it stays in the outbox', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = TG_ARGV[0];
END
$$;
CREATE TRIGGER job_events_deleted_only_when_published BEFORE DELETE ON job_events
    FOR EACH ROW WHEN (OLD.published_at IS NULL)
    EXECUTE FUNCTION events_deleted_only_when_published('job_events_deleted_only_when_published');
CREATE TRIGGER offer_events_deleted_only_when_published BEFORE DELETE ON offer_events
    FOR EACH ROW WHEN (OLD.published_at IS NULL)
    EXECUTE FUNCTION events_deleted_only_when_published('offer_events_deleted_only_when_published');

-- A photo leaves with the job that holds it, unless another job holds it too (a worker may
-- attach one photo to two jobs). Both that test and the foreign keys' own check on every
-- deleted photo look jobs up by photo: without these, each would read the whole table.
-- IF NOT EXISTS: on a large jobs table, build them first by hand CONCURRENTLY (operations.md).
CREATE INDEX IF NOT EXISTS jobs_by_before_photo ON jobs (before_photo_id) WHERE before_photo_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS jobs_by_after_photo ON jobs (after_photo_id) WHERE after_photo_id IS NOT NULL;
