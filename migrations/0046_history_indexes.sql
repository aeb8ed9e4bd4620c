-- The console's last hour, read through indexes on time (issue 35): its figures are about the
-- last hour, so each reads only the last hour's rows, however long the tables grow.
-- A job is created at version 1 and leaves open only by being taken (job.assigned) or by
-- finishing, so its first fill is the job.assigned at version 2: no look back at its earlier
-- events (that anti-join read every job.assigned ever written).
CREATE INDEX job_events_first_fills ON job_events (occurred_at)
    WHERE type = 'job.assigned' AND version = 2;
-- Rounds that ended unfilled, by when.
CREATE INDEX offer_events_unfilled ON offer_events (occurred_at)
    WHERE type = 'job.unfilled';
-- The live market by status (the console's jobs by status): status first, so entries arrive
-- in heap order and pages emptied as jobs finish are freed by vacuum. Counting through
-- jobs_live_by_place, keyed by place, read every sparse page it had left (885 pages for 900
-- live jobs after one day of the seed's load: 21x the empty database).
CREATE INDEX jobs_live_by_status ON jobs (status)
    WHERE status IN ('open', 'assigned', 'in_progress');
