-- What worker and business apps need beyond the claim: time windows that end, ratings, a
-- minimum rating per job, and declined offers. Every rule is the database's too.

-- A job whose window ended and that nobody holds is `expired`: it can no longer be taken.
ALTER TABLE jobs DROP CONSTRAINT jobs_status_valid;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_valid CHECK (
    status IN ('open', 'assigned', 'in_progress', 'completed', 'cancelled', 'expired'));

-- Expired only once the window has ended (a CHECK cannot read the clock; a trigger can).
CREATE FUNCTION jobs_expired_only_after_the_window() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.window_end > now() THEN
        RAISE EXCEPTION 'job % cannot expire: its window ends at %', NEW.id, NEW.window_end
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_expired_only_after_the_window';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_expired_only_after_the_window
    BEFORE INSERT OR UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN (NEW.status = 'expired')
    EXECUTE FUNCTION jobs_expired_only_after_the_window();

-- The sweeper finds open jobs whose window ended.
CREATE INDEX jobs_open_window_end ON jobs (window_end) WHERE status = 'open';

-- A business may ask for workers rated at least this (1.0 to 5.0).
ALTER TABLE jobs
    ADD COLUMN min_rating numeric(3, 2),
    ADD CONSTRAINT jobs_min_rating_range CHECK (min_rating BETWEEN 1 AND 5);

-- The business rates the work once it is completed: 1 to 5 stars, once per job.
ALTER TABLE jobs
    ADD COLUMN rating smallint,
    ADD CONSTRAINT jobs_rating_stars CHECK (rating BETWEEN 1 AND 5),
    ADD CONSTRAINT jobs_rated_only_when_completed CHECK (rating IS NULL OR status = 'completed');

CREATE FUNCTION jobs_rated_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'job % is already rated', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_rated_once';
END
$$;

CREATE TRIGGER jobs_rated_once
    BEFORE UPDATE OF rating ON jobs
    FOR EACH ROW
    WHEN (OLD.rating IS NOT NULL AND NEW.rating IS DISTINCT FROM OLD.rating)
    EXECUTE FUNCTION jobs_rated_once();

-- A worker's rating is a damped (Bayesian) average of the stars received: as if every worker
-- started with 5 ratings of 4 stars. One lucky or unlucky rating barely moves a newcomer; after
-- five of their own, their own mean weighs half; after fifty, nearly all. Null until the first
-- rating (and a worker with no rating is below any job's min_rating). Generated from the count
-- and the sum, so it can never disagree with them.
ALTER TABLE workers
    DROP COLUMN rating,
    ADD COLUMN ratings integer NOT NULL DEFAULT 0,
    ADD COLUMN stars integer NOT NULL DEFAULT 0,
    ADD CONSTRAINT workers_ratings_counted CHECK (ratings >= 0 AND stars BETWEEN ratings AND 5 * ratings);
ALTER TABLE workers
    ADD COLUMN rating numeric(3, 2) GENERATED ALWAYS AS (
        CASE WHEN ratings = 0 THEN NULL ELSE round((5 * 4.0 + stars) / (5 + ratings), 2) END
    ) STORED;

-- A worker said no to a job: it is never offered to them again (any round).
CREATE TABLE job_declines (
    job_id       uuid NOT NULL REFERENCES jobs (id),
    worker_id    text NOT NULL,
    declined_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, worker_id)
);

-- A worker pulls their offers, newest first.
CREATE INDEX job_offers_of_worker ON job_offers (worker_id, created_at DESC);

-- The new events: the job expired (its window ended), the business rated the work.
ALTER TABLE job_events DROP CONSTRAINT job_events_type_valid;
ALTER TABLE job_events ADD CONSTRAINT job_events_type_valid CHECK (type IN (
    'job.created', 'job.assigned', 'job.checked_in', 'job.released', 'job.reopened',
    'job.started', 'job.completed', 'job.cancelled', 'job.photo_attached',
    'job.expired', 'job.rated'));

-- The public Job gains `min_rating` and `rating`.
CREATE OR REPLACE FUNCTION dispatch_job(j jobs) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', j.id,
    'status', j.status,
    'version', j.version,
    'business_id', j.business_id,
    'assignee_id', j.assignee_id,
    'location', jsonb_build_object('lat', j.lat, 'lng', j.lng),
    'skills', to_jsonb(j.skills),
    'window', jsonb_build_object('start', dispatch_time(j.window_start),
                                 'end', dispatch_time(j.window_end)),
    'min_rating', j.min_rating::float8,
    'lease_expires_at', dispatch_time(j.lease_expires_at),
    'before_photo_id', j.before_photo_id,
    'after_photo_id', j.after_photo_id,
    'rating', j.rating,
    'created_at', dispatch_time(j.created_at),
    'updated_at', dispatch_time(j.updated_at))
$$;

-- What an offered worker needs to decide: the Job's own values, fewer fields.
CREATE FUNCTION dispatch_job_summary(j jobs) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object('id', d -> 'id', 'version', d -> 'version',
                            'location', d -> 'location', 'skills', d -> 'skills',
                            'window', d -> 'window', 'min_rating', d -> 'min_rating')
    FROM dispatch_job(j) AS d
$$;

-- History reads the same throughout: earlier events gain the new fields, as null.
UPDATE job_events
   SET data = data || '{"min_rating": null, "rating": null}'
 WHERE NOT data ? 'min_rating';
UPDATE offer_events
   SET data = jsonb_set(data, '{job,min_rating}', 'null')
 WHERE type = 'offer.created' AND NOT data -> 'job' ? 'min_rating';
