"""The SQL of jobs, one statement per move, each with the invariant it protects.

The WHERE clause is the lock: Postgres serialises updates to one row, so of N concurrent
claimers exactly one matches and the rest match zero rows. No SELECT ... FOR UPDATE, no
advisory lock, no retry loop.
"""

from dispatch.outbox import with_event

# A job is born open at version 1, with its `job.created` event.
CREATE_JOB = with_event("""
    INSERT INTO jobs (business_id, lat, lng, skills, window_start, window_end)
    VALUES (%(business_id)s, %(lat)s, %(lng)s, %(skills)s, %(window_start)s, %(window_end)s)
    RETURNING *
""")

# Accept: everything that makes the job claimable is in the WHERE clause.
# - open, or assigned with a lease that already ran out (correctness never waits for the sweeper)
# - still at the version the worker saw, when the worker sent one (fencing token)
# - the worker has every skill of the job
# - the worker holds no other live job (under a race, jobs_one_live_job_per_worker decides)
ACCEPT_JOB = with_event("""
    UPDATE jobs
       SET status = 'assigned',
           assignee_id = %(worker_id)s,
           lease_expires_at = now() + make_interval(secs => %(lease_seconds)s),
           version = version + 1,
           updated_at = now()
     WHERE id = %(job_id)s
       AND (status = 'open' OR (status = 'assigned' AND lease_expires_at <= now()))
       AND (%(version)s::integer IS NULL OR version = %(version)s::integer)
       AND skills <@ coalesce((SELECT w.skills FROM workers w WHERE w.id = %(worker_id)s), '{}')
       AND NOT EXISTS (SELECT 1 FROM jobs live
                        WHERE live.assignee_id = %(worker_id)s
                          AND live.status IN ('assigned', 'in_progress')
                          AND live.id <> %(job_id)s)
    RETURNING *
""")

# Only on the failure path, and cheap first: the job's own state names the usual causes
# (taken, finished, stale version, not found) with a primary-key read.
ACCEPT_FAILURE_JOB = """
SELECT status, version, assignee_id,
       status = 'assigned' AND lease_expires_at <= now() AS lease_expired
  FROM jobs WHERE id = %(job_id)s
"""

# Only when the job is still claimable: what about the worker stood in the way.
ACCEPT_FAILURE_WORKER = """
SELECT (SELECT skills FROM jobs WHERE id = %(job_id)s)
           <@ coalesce((SELECT skills FROM workers WHERE id = %(worker_id)s), '{}') AS has_skills,
       EXISTS (SELECT 1 FROM jobs live
                WHERE live.assignee_id = %(worker_id)s
                  AND live.status IN ('assigned', 'in_progress')
                  AND live.id <> %(job_id)s) AS worker_busy
"""

JOB_BY_ID = "SELECT * FROM jobs WHERE id = %(job_id)s"

EVENTS_OF_JOB = """
SELECT id, job_id, type, version, actor, occurred_at, data
  FROM job_events WHERE job_id = %(job_id)s ORDER BY version
"""
