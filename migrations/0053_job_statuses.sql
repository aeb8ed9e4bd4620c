-- The job's statuses, once (issue 36, point 1). The six statuses are jobs_status_valid's; the
-- sets the statements ask about are written here, each once, as IMMUTABLE SQL functions that
-- the planner inlines where they are called: `dispatch_live(j.status)` plans as
-- `j.status = ANY ('{assigned,in_progress}')`, so a statement still proves the partial
-- indexes written with the same set (jobs_one_live_job_per_worker, jobs_live_by_place,
-- jobs_live_by_status, jobs_recently_finished: tests/integration/test_one_source.py holds each
-- index's predicate, and the Python enum's sets, to these functions). Until now the sets were
-- Python strings pasted into each statement (dispatch.jobs.sql LIVE, FINISHED, UNFINISHED,
-- UNTAKEN) and a literal in dispatch_holding.

-- A worker holds the job (at most one each: jobs_one_live_job_per_worker).
CREATE FUNCTION dispatch_live(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT status IN ('assigned', 'in_progress') $$;

-- Nothing moves the job any more (only such a job may leave: jobs_deleted_only_when_finished).
CREATE FUNCTION dispatch_finished(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT status IN ('completed', 'cancelled', 'expired') $$;

-- Still in play: open or held.
CREATE FUNCTION dispatch_unfinished(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT status IN ('open', 'assigned', 'in_progress') $$;

-- Nobody is assigned (jobs_assignee_iff_taken): a move into one of these clears the holder.
CREATE FUNCTION dispatch_untaken(status text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT status IN ('open', 'cancelled', 'expired') $$;

-- Who may hold a job (0049) reads "free" from the one definition of live.
CREATE OR REPLACE FUNCTION dispatch_holding(j jobs, worker text, seen_version integer DEFAULT NULL)
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
                          AND dispatch_live(live.status)
                          AND live.id <> j.id) AS worker_free,
           EXISTS (SELECT 1 FROM job_applications a
                    WHERE a.job_id = j.id AND a.worker_id = worker
                      AND a.withdrawn_at IS NULL) AS applicant
  ) c
$$;
