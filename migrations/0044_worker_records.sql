-- A worker's record, kept as it changes (issue 35): the counts the business chooses on
-- (choice/sql.py APPLICANTS) and the auto-pick ranks by (BEST_APPLICANT): jobs completed, jobs
-- given back (job.released by them), leases that ran out on them (a job.reopened whose previous
-- version named them the assignee: "vanished"). Recounting these from every job and event a
-- worker ever had cost 0.7-1.5 s per applicant list at 30 days; a row per worker costs one
-- index read. The triggers below keep it; nobody else writes it (worker_records_kept_by_history:
-- dispatch_app may read it, never write it). It is not recounted when old history leaves the
-- hot tables: a worker's record outlives the rows that made it (so no DELETE triggers).
CREATE TABLE worker_records (
    worker_id text PRIMARY KEY,
    completed integer NOT NULL DEFAULT 0,
    released  integer NOT NULL DEFAULT 0,
    vanished  integer NOT NULL DEFAULT 0,
    CONSTRAINT worker_records_counts_nonnegative
        CHECK (completed >= 0 AND released >= 0 AND vanished >= 0)
);
GRANT SELECT ON worker_records TO dispatch_app;

-- One way to move a record, for both triggers. SECURITY DEFINER: it writes as the schema's
-- owner, because the application role may not (its search_path pinned, as such a function's
-- must be). The row is updated first and inserted only when missing: an INSERT checks
-- worker_records_counts_nonnegative on the row it proposes even when it then conflicts, so an
-- upsert of a -1 would be refused for a worker whose record is 1 (a completed job rewritten).
CREATE FUNCTION worker_records_add(
    worker text, completed_by integer, released_by integer, vanished_by integer
) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  UPDATE worker_records
     SET completed = completed + completed_by,
         released = released + released_by,
         vanished = vanished + vanished_by
   WHERE worker_id = worker;
  IF NOT FOUND THEN
    INSERT INTO worker_records AS r (worker_id, completed, released, vanished)
    VALUES (worker, completed_by, released_by, vanished_by)
    ON CONFLICT (worker_id) DO UPDATE  -- a first fact of theirs written at the same time
       SET completed = r.completed + completed_by,
           released = r.released + released_by,
           vanished = r.vanished + vanished_by;
  END IF;
END
$$;
REVOKE ALL ON FUNCTION worker_records_add(text, integer, integer, integer) FROM PUBLIC;

-- Completed jobs: a row that becomes completed counts for its assignee; one that stops being
-- completed (or changes hands while completed: only the owner could) stops counting.
CREATE FUNCTION worker_records_completed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.status = 'completed' AND OLD.assignee_id IS NOT NULL THEN
    PERFORM worker_records_add(OLD.assignee_id, -1, 0, 0);
  END IF;
  IF NEW.status = 'completed' AND NEW.assignee_id IS NOT NULL THEN
    PERFORM worker_records_add(NEW.assignee_id, 1, 0, 0);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER worker_records_completed
    AFTER INSERT OR UPDATE OF status, assignee_id ON jobs
    FOR EACH ROW
    WHEN (NEW.status = 'completed')
    EXECUTE FUNCTION worker_records_completed();
CREATE TRIGGER worker_records_uncompleted
    AFTER UPDATE OF status, assignee_id ON jobs
    FOR EACH ROW
    WHEN (OLD.status = 'completed' AND NEW.status IS DISTINCT FROM 'completed')
    EXECUTE FUNCTION worker_records_completed();

-- Given back and vanished, from the job's own events (insert-only): the released job names
-- its worker as the actor; a reopened job's holder is named by its previous version's event
-- (job_events_one_per_change finds it).
CREATE FUNCTION worker_records_left() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  holder text;
BEGIN
  IF NEW.type = 'job.released' THEN
    PERFORM worker_records_add(NEW.actor, 0, 1, 0);
  ELSE
    SELECT before.data ->> 'assignee_id' INTO holder FROM job_events before
     WHERE before.job_id = NEW.job_id AND before.version = NEW.version - 1;
    IF holder IS NOT NULL THEN
      PERFORM worker_records_add(holder, 0, 0, 1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER worker_records_left
    AFTER INSERT ON job_events
    FOR EACH ROW
    WHEN (NEW.type IN ('job.released', 'job.reopened'))
    EXECUTE FUNCTION worker_records_left();

-- The records so far, counted once. The triggers exist before the count and their creation
-- locks jobs and job_events against writes until this migration commits: nothing is missed
-- or counted twice.
INSERT INTO worker_records (worker_id, completed, released, vanished)
SELECT worker_id, sum(completed)::int, sum(released)::int, sum(vanished)::int
  FROM (SELECT assignee_id AS worker_id, 1 AS completed, 0 AS released, 0 AS vanished
          FROM jobs WHERE status = 'completed'
        UNION ALL
        SELECT actor, 0, 1, 0 FROM job_events WHERE type = 'job.released'
        UNION ALL
        SELECT before.data ->> 'assignee_id', 0, 0, 1
          FROM job_events r
          JOIN job_events before ON before.job_id = r.job_id AND before.version = r.version - 1
         WHERE r.type = 'job.reopened' AND before.data ->> 'assignee_id' IS NOT NULL) facts
 GROUP BY worker_id;
