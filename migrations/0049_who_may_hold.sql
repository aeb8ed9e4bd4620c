-- Who may hold a job, written once (issue 36, point 1). Until now the rule was written about
-- six times (the accept's conditions, the assign's, the apply's, the auto-pick, the applicant
-- list, the offers' candidates and dispatch_nearby), and the copies had drifted apart.
-- dispatch_holding is the one definition: one row of named booleans for a (job, worker), each
-- cause once, and each path's rule as the conjunction of its causes. Every statement that asks
-- the question reads it (jobs/sql.py, choice/sql.py, offers/sql.py, dispatch_nearby below), and
-- the failure reads name a refused command's cause from the same columns. A rule added later
-- is added here, once.
--
-- LANGUAGE sql, STABLE, not STRICT, no SET clause, one SELECT: the planner inlines it where it
-- is called (FROM ... LATERAL dispatch_holding(j, ...), or a scalar sub-select of one of its
-- columns), so each statement keeps its own plan and indexes, and only the columns a
-- statement reads are computed (a composite like may_accept repeats its causes' expressions,
-- never a second look-up for a column nobody reads).
CREATE FUNCTION dispatch_holding(j jobs, worker text, seen_version integer DEFAULT NULL)
RETURNS TABLE (
    -- the job's side
    first_come boolean,    -- the first worker to accept takes it
    choice boolean,        -- workers apply and the business (or the auto-pick) assigns
    claimable boolean,     -- open, or assigned with a lease that already ran out
    open boolean,          -- open (nobody holds it, not even by a lapsed lease)
    window_open boolean,   -- its window has not ended (correctness never waits for the sweeper)
    at_version boolean,    -- at the version the caller saw, when it sent one (fencing token)
    -- the worker's side
    has_skills boolean,    -- every skill of the job (no profile: no skills)
    rated_enough boolean,  -- the rating the job asks for (no rating: below any)
    not_blocked boolean,   -- the job's business did not block the worker
    worker_free boolean,   -- holds no other live job (jobs_one_live_job_per_worker decides races)
    applicant boolean,     -- has a standing application to the job
    -- the rules, each a conjunction of the causes above
    qualified boolean,     -- has_skills and rated_enough
    may_hold boolean,      -- qualified, not blocked, free: who may hold a job at all
    may_accept boolean,    -- the accept: first come, claimable, in the window, at the version
    may_assign boolean,    -- the assign: choice, claimable, in the window, at the version, applied
    may_apply boolean,     -- an application: choice, open, in the window; busy workers may apply
    may_see boolean        -- nearby: open, in the window, qualified, not blocked (busy or not)
)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT c.first_come, c.choice, c.claimable, c.open, c.window_open, c.at_version,
       c.has_skills, c.rated_enough, c.not_blocked, c.worker_free, c.applicant,
       c.has_skills AND c.rated_enough,
       c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.first_come AND c.claimable AND c.window_open AND c.at_version
           AND c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.choice AND c.claimable AND c.window_open AND c.at_version AND c.applicant
           AND c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.choice AND c.open AND c.window_open
           AND c.has_skills AND c.rated_enough AND c.not_blocked,
       c.open AND c.window_open AND c.has_skills AND c.rated_enough AND c.not_blocked
  FROM (
    SELECT j.assignment = 'first_come' AS first_come,
           j.assignment = 'business_choice' AS choice,
           (j.status = 'open' OR (j.status = 'assigned' AND j.lease_expires_at <= now()))
               AS claimable,
           j.status = 'open' AS open,
           j.window_end > now() AS window_open,
           (seen_version IS NULL OR j.version = seen_version) AS at_version,
           j.skills <@ coalesce((SELECT w.skills FROM workers w WHERE w.id = worker), '{}')
               AS has_skills,
           (j.min_rating IS NULL
            OR coalesce(j.min_rating <= (SELECT w.rating FROM workers w WHERE w.id = worker),
                        false)) AS rated_enough,
           NOT EXISTS (SELECT 1 FROM rosters r
                        WHERE r.business_id = j.business_id AND r.worker_id = worker
                          AND r.list = 'blocked') AS not_blocked,
           NOT EXISTS (SELECT 1 FROM jobs live
                        WHERE live.assignee_id = worker
                          AND live.status IN ('assigned', 'in_progress')
                          AND live.id <> j.id) AS worker_free,
           EXISTS (SELECT 1 FROM job_applications a
                    WHERE a.job_id = j.id AND a.worker_id = worker
                      AND a.withdrawn_at IS NULL) AS applicant
  ) c
$$;

-- The accept, first come's hot path, as an ordinary function written here (it was generated
-- by the migrator from Python strings, dispatch.outbox.sql.kept_planned, until this
-- migration). A function because a plpgsql function keeps the plans of its statements per
-- server connection, without the prepared statements that RDS Proxy pins a connection for; a
-- call is a plain statement. The UPDATE's WHERE clause is the lock: of N concurrent claimers
-- exactly one matches. The claim: the lease runs p_lease_seconds, cut at the window's end
-- (jobs_lease_within_window). Every change writes its event in the same statement
-- (job_events_one_per_change); the keyed form also records the caller's idempotency key with
-- its answer (a key already taken raises idempotency_keys_pkey, and the statement undoes
-- itself).
DROP FUNCTION IF EXISTS dispatch_accept_job(
    text, text, uuid, integer, integer, text);
DROP FUNCTION IF EXISTS dispatch_accept_job_keyed(
    text, integer, text, text, uuid, text, integer, text, integer, text);

CREATE FUNCTION dispatch_accept_job(
    p_actor text, p_event_type text, p_job_id uuid, p_lease_seconds integer,
    p_version integer, p_worker_id text
) RETURNS TABLE (document json, answer text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH changed AS (
      UPDATE jobs AS j
         SET status = 'assigned',
             assignee_id = p_worker_id,
             before_photo_id = NULL,  -- a retaken job starts without the last holder's evidence
             lease_expires_at = least(now() + make_interval(secs => p_lease_seconds), window_end),
             version = version + 1,
             updated_at = now()
       WHERE j.id = p_job_id
         AND (SELECT h.may_accept FROM dispatch_holding(j, p_worker_id, p_version) h)
      RETURNING j.*, dispatch_job_json(j) AS document
  ), event AS (
      INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
      SELECT id, p_event_type, version, p_actor, updated_at, document::jsonb FROM changed
  )
  SELECT changed.document, changed.document::text FROM changed;
END
$$;

CREATE FUNCTION dispatch_accept_job_keyed(
    p_actor text, p_answer_status integer, p_event_type text, p_fingerprint text,
    p_job_id uuid, p_key text, p_lease_seconds integer, p_principal text, p_version integer,
    p_worker_id text
) RETURNS TABLE (document json, answer text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH changed AS (
      UPDATE jobs AS j
         SET status = 'assigned',
             assignee_id = p_worker_id,
             before_photo_id = NULL,  -- a retaken job starts without the last holder's evidence
             lease_expires_at = least(now() + make_interval(secs => p_lease_seconds), window_end),
             version = version + 1,
             updated_at = now()
       WHERE j.id = p_job_id
         AND (SELECT h.may_accept FROM dispatch_holding(j, p_worker_id, p_version) h)
      RETURNING j.*, dispatch_job_json(j) AS document
  ), event AS (
      INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
      SELECT id, p_event_type, version, p_actor, updated_at, document::jsonb FROM changed
  ), answers AS (
      SELECT changed.document, changed.document::text AS answer FROM changed
  ), answered AS (
      INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
      SELECT p_principal, p_key, p_fingerprint, p_answer_status, answer FROM answers
  )
  SELECT answers.document, answers.answer FROM answers;
END
$$;

-- Nearby: the same walk of the nearest-neighbour index of open jobs as before (0013, 0026),
-- whose filter is now dispatch_holding's may_see (open, in its window, qualified, not blocked).
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
         WHERE j.status = 'open'  -- the index's predicate (jobs_open_mercator)
           AND j.mercator <@ cap[side]
           -- who may see it: dispatch_holding, checked only once a job is in reach
           AND (SELECT h.may_see FROM dispatch_holding(j, worker) h)
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
