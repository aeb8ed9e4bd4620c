-- A lost race is a yes (issue 38, point 2). A worker who held an offer, tapped Accept and lost
-- the race (409 JOB_TAKEN) left no record, so the `likely` policy read them as silence: in a
-- market whose records are all live, about one yes per filled job missed. The accept's failure
-- path (dispatch.jobs.commands.accept_job, once the refusal is JOB_TAKEN; the winner's path,
-- dispatch_accept_job, is untouched) now records the loser here when they held an offer of
-- the round that was won (jobs.sql RECORD_LOST_RACE), and dispatch_offer_answer reads that
-- offer as `lost_race`: a yes for the door and the answer pace, not a job taken (no idle since,
-- no hold: worker_answers.lost_races lets the policy take them out of its holds).

-- One row per worker and job (a second tap, or a retry, writes nothing new), only for a
-- worker who held an offer of the job (job_races_lost_held_an_offer, on job_offers_once_per_
-- worker), and only when the round of that offer was won by someone else: the job's next
-- version after the offer's is job.assigned to another worker
-- (job_races_lost_only_when_taken). `lost_at`: when the loser's accept was refused.
CREATE TABLE job_races_lost (
    job_id    uuid NOT NULL,
    worker_id text NOT NULL,
    lost_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, worker_id),
    CONSTRAINT job_races_lost_held_an_offer FOREIGN KEY (job_id, worker_id)
        REFERENCES job_offers (job_id, worker_id)
);

-- Whether the worker lost the race for the job: they held an offer of it, and the round of that
-- offer was won by another worker (the job's next version after the offer's is job.assigned to
-- someone else). One rule, for the guard below and for the accept's failure path's record
-- (jobs.sql RECORD_LOST_RACE). Two probes of primary keys.
CREATE FUNCTION dispatch_lost_race(p_job_id uuid, p_worker_id text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
SELECT EXISTS (SELECT 1 FROM job_offers o
                 JOIN job_events won ON won.job_id = o.job_id AND won.version = o.job_version + 1
                WHERE o.job_id = p_job_id AND o.worker_id = p_worker_id
                  AND won.type = 'job.assigned'
                  AND won.data ->> 'assignee_id' IS DISTINCT FROM p_worker_id)
$$;

-- (With no offer at all, the foreign key refuses the row, by its own name.)
CREATE FUNCTION job_races_lost_only_when_taken() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM job_offers o WHERE o.job_id = NEW.job_id AND o.worker_id = NEW.worker_id;
  IF FOUND AND NOT dispatch_lost_race(NEW.job_id, NEW.worker_id) THEN
    RAISE EXCEPTION 'worker % lost no race for job %: its offer''s round was not won by another',
          NEW.worker_id, NEW.job_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'job_races_lost_only_when_taken';
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER job_races_lost_only_when_taken BEFORE INSERT ON job_races_lost
    FOR EACH ROW EXECUTE FUNCTION job_races_lost_only_when_taken();

-- As job_declines: the application writes and reads it, never changes or deletes it; the
-- retention duty archives and deletes it with its job (docs/retention.md).
GRANT SELECT, INSERT ON job_races_lost TO dispatch_app;
GRANT SELECT, DELETE ON job_races_lost TO dispatch_archivist;

-- Each worker's lost races, decayed as the other tallies (migration 0048), so that the policy's
-- holds reads the jobs they took (accepts less lost races): a lost race is a yes, not a hold.
ALTER TABLE worker_answers ADD COLUMN lost_races double precision NOT NULL DEFAULT 0;
ALTER TABLE worker_answers ADD CONSTRAINT worker_answers_lost_races_within_accepts
    CHECK (lost_races >= 0 AND lost_races <= accepts * (1 + 1e-9) + 1e-9);

-- How a worker answered one offer: as migration 0054's, with a lost race (a job_races_lost row
-- for the offer's job and worker) read as `lost_race`, after a decline and a won accept and
-- before silence: the worker said yes, `seconds` after the offer (its lost_at), and took no job
-- (`ending` NULL). One rule for the records folded once (FOLD_ANSWERS) and for a worker's
-- offers since (LIKELY_CANDIDATES), which count it as a yes and not as a job taken. The look-up
-- is a LATERAL with LIMIT 1 on the primary key, as the others.
CREATE OR REPLACE FUNCTION dispatch_offer_answer(
    p_job_id uuid, p_job_version integer, p_worker_id text, p_offered_at timestamptz,
    p_silence_s double precision
) RETURNS TABLE (answer text, ending text, seconds double precision)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
SELECT CASE
         WHEN d.worker_id IS NOT NULL THEN 'decline'
         WHEN taken.type = 'job.assigned' AND taken.data ->> 'assignee_id' = p_worker_id
           THEN 'accept'
         WHEN lost.lost_at IS NOT NULL THEN 'lost_race'
         WHEN coalesce(taken.occurred_at, now()) - p_offered_at
              >= make_interval(secs => p_silence_s) THEN 'silence'
         ELSE 'pending'
       END,
       CASE WHEN taken.type = 'job.assigned'
             AND taken.data ->> 'assignee_id' = p_worker_id THEN later.type END,
       extract(epoch FROM CASE
         WHEN d.worker_id IS NOT NULL THEN d.declined_at - p_offered_at
         WHEN taken.type = 'job.assigned' AND taken.data ->> 'assignee_id' = p_worker_id
           THEN taken.occurred_at - p_offered_at
         WHEN lost.lost_at IS NOT NULL THEN lost.lost_at - p_offered_at
       END)::float8
  FROM (SELECT) one
  LEFT JOIN LATERAL (SELECT d.worker_id, d.declined_at FROM job_declines d
                      WHERE d.job_id = p_job_id AND d.worker_id = p_worker_id
                      LIMIT 1) d ON true
  LEFT JOIN LATERAL (SELECT e.type, e.data, e.occurred_at FROM job_events e
                      WHERE e.job_id = p_job_id AND e.version = p_job_version + 1
                      LIMIT 1) taken ON true
  LEFT JOIN LATERAL (SELECT e.type FROM job_events e
                      WHERE e.job_id = p_job_id AND e.version = p_job_version + 2
                      LIMIT 1) later ON true
  LEFT JOIN LATERAL (SELECT l.lost_at FROM job_races_lost l
                      WHERE l.job_id = p_job_id AND l.worker_id = p_worker_id
                      LIMIT 1) lost ON true
$$;
