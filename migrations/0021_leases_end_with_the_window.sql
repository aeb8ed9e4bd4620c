-- A lease never outlives the job's window. Accept and check-in give DISPATCH_LEASE_SECONDS, cut
-- at window_end; check-in and start happen only while the window lasts. Until now a job
-- assigned inside its window could be checked in after it ended, again and again, and when
-- that lease finally ran out the sweeper moved it from assigned to expired. Now the window's
-- end is the end of any assignment that has not started: the sweeper expires the job then
-- (one job.expired event; reopening it would offer a job nobody may take any more). Work in
-- progress is never cut off.

-- Leases that outlived their window end with it (the sweeper then expires those jobs).
UPDATE jobs SET lease_expires_at = window_end WHERE lease_expires_at > window_end;

ALTER TABLE jobs ADD CONSTRAINT jobs_lease_within_window CHECK (lease_expires_at <= window_end);

-- Nobody is given a lease or a longer one, and nobody starts the work, once the window has ended
-- (a CHECK cannot read the clock; a trigger can). A lease cut at the window's end lies in the
-- past once the window is over: only the window can tell that it must not be given.
CREATE FUNCTION jobs_held_only_within_the_window() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.window_end <= now() THEN
        RAISE EXCEPTION 'job %: its window ended at %; no lease, no start after it',
                        NEW.id, NEW.window_end
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_held_only_within_the_window';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_held_only_within_the_window
    BEFORE UPDATE OF lease_expires_at, status ON jobs
    FOR EACH ROW
    WHEN ((NEW.lease_expires_at > OLD.lease_expires_at)
          OR (NEW.lease_expires_at IS NOT NULL AND OLD.lease_expires_at IS NULL)
          OR (OLD.status = 'assigned' AND NEW.status = 'in_progress'))
    EXECUTE FUNCTION jobs_held_only_within_the_window();
