-- Rosters: each business's favourites (who hear of its jobs first, when it asks) and blocked
-- workers (who never see, are never offered, never take its jobs). One table, so a worker is
-- on at most one of a business's lists (the primary key). The database refuses, whoever
-- writes, an assignment or an application of a worker the business blocked.

CREATE TABLE rosters (
    business_id text NOT NULL,
    worker_id text NOT NULL,
    list text NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (business_id, worker_id),
    CONSTRAINT rosters_list_valid CHECK (list IN ('favourite', 'blocked'))
);

-- Favourites first: a wave 0 before the ordinary waves.
ALTER TABLE jobs
    ADD COLUMN offer_first_to text,
    ADD CONSTRAINT jobs_offer_first_to_valid CHECK (offer_first_to IN ('favourites'));
ALTER TABLE job_offers DROP CONSTRAINT job_offers_wave_positive;
ALTER TABLE job_offers ADD CONSTRAINT job_offers_wave_positive CHECK (wave >= 0);
ALTER TABLE offer_waves DROP CONSTRAINT offer_waves_wave_positive;
ALTER TABLE offer_waves ADD CONSTRAINT offer_waves_wave_positive CHECK (wave >= 0);

ALTER TYPE dispatch_job_document ADD ATTRIBUTE offer_first_to text;

CREATE OR REPLACE FUNCTION dispatch_job_json(j jobs) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    j.id,
    j.status,
    j.version,
    j.business_id,
    j.assignee_id,
    ROW(j.lat, j.lng)::dispatch_location,
    j.skills,
    ROW(dispatch_time(j.window_start), dispatch_time(j.window_end))::dispatch_window,
    j.min_rating::float8,
    dispatch_time(j.lease_expires_at),
    j.before_photo_id,
    j.after_photo_id,
    j.rating,
    dispatch_time(j.created_at),
    dispatch_time(j.updated_at),
    j.assignment,
    j.auto_pick,
    j.choose_within_s,
    j.offer_first_to)::dispatch_job_document)
$$;

CREATE FUNCTION jobs_never_to_a_blocked_worker() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM rosters r
              WHERE r.business_id = NEW.business_id AND r.worker_id = NEW.assignee_id
                AND r.list = 'blocked') THEN
    RAISE EXCEPTION 'business % blocked worker %', NEW.business_id, NEW.assignee_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_never_to_a_blocked_worker';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER jobs_never_to_a_blocked_worker
    BEFORE UPDATE OF status, assignee_id ON jobs
    FOR EACH ROW
    WHEN (NEW.status = 'assigned' AND NEW.assignee_id IS DISTINCT FROM OLD.assignee_id)
    EXECUTE FUNCTION jobs_never_to_a_blocked_worker();

CREATE FUNCTION job_applications_not_from_blocked() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM rosters r JOIN jobs j ON j.business_id = r.business_id
              WHERE j.id = NEW.job_id AND r.worker_id = NEW.worker_id
                AND r.list = 'blocked') THEN
    RAISE EXCEPTION 'the business of job % blocked worker %', NEW.job_id, NEW.worker_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'job_applications_not_from_blocked';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER job_applications_not_from_blocked
    BEFORE INSERT OR UPDATE OF withdrawn_at ON job_applications
    FOR EACH ROW WHEN (NEW.withdrawn_at IS NULL)
    EXECUTE FUNCTION job_applications_not_from_blocked();

CREATE OR REPLACE FUNCTION dispatch_nearby(at_lat double precision, at_lng double precision, radius_m double precision, worker text, wanted integer) RETURNS TABLE(document json, distance_m double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET enable_sort TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
  here constant point := dispatch_mercator(at_lat, at_lng);
  cap constant box[] := dispatch_cap(at_lat, at_lng, radius_m);
  floor_m constant double precision := dispatch_mercator_floor_m(at_lat, radius_m);
  origin point;
  kept jobs[] := '{}';
  kept_m double precision[] := '{}';
  kth_m double precision := 'Infinity';
  step record;
BEGIN
  FOR side IN 1 .. cardinality(cap) LOOP
    origin := CASE side WHEN 1 THEN here
                        ELSE point(here[0] - 2 * pi() * sign(here[0]), here[1]) END;
    FOR step IN
        SELECT j, dispatch_distance_m(at_lat, at_lng, j.lat, j.lng) AS metres,
               j.mercator <-> origin AS map_distance
          FROM jobs j
         WHERE j.status = 'open'
           AND j.mercator <@ cap[side]
           AND j.window_end > now()
           -- The worker's skills and rating, read once and only once a job is in reach.
           AND j.skills <@ coalesce((SELECT w.skills FROM workers w WHERE w.id = worker), '{}')
           AND (j.min_rating IS NULL
                OR j.min_rating <= (SELECT w.rating FROM workers w WHERE w.id = worker))
           -- Never a job of a business that blocked the worker (its primary key, per job).
           AND NOT EXISTS (SELECT 1 FROM rosters r
                            WHERE r.business_id = j.business_id AND r.worker_id = worker
                              AND r.list = 'blocked')
         ORDER BY j.mercator <-> origin
    LOOP
      EXIT WHEN step.map_distance * floor_m > least(kth_m, radius_m);
      CONTINUE WHEN step.metres > radius_m;
      kept := kept || step.j;
      kept_m := kept_m || step.metres;
      IF cardinality(kept_m) = wanted THEN
        kth_m := (SELECT max(m) FROM unnest(kept_m) m);
      END IF;
    END LOOP;
  END LOOP;
  IF cardinality(kept) = 0 THEN
    RETURN;  -- nothing in reach (open country, most often)
  END IF;
  RETURN QUERY
    SELECT dispatch_job_json(k), dispatch_distance_m(at_lat, at_lng, k.lat, k.lng) AS metres
      FROM unnest(kept) k
     ORDER BY metres
     LIMIT wanted;
END
$$;

GRANT SELECT, INSERT, DELETE ON rosters TO dispatch_app;
GRANT UPDATE (list, added_at) ON rosters TO dispatch_app;
