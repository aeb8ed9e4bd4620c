-- When the worker a business chose gives the job back (release) or vanishes (the lease ran out
-- and the sweeper reopened it), the job goes back to the business's choice: their application
-- ends (they are not picked again), the deadline is set again (without auto_pick the business
-- gets its full choose_within_s anew; with auto_pick it stands, so a passed deadline picks the
-- next applicant at the sweeper's next pass), and the business hears `job.back_to_choice`
-- (data: who left and how, the applicants that remain, the deadline). In the database, as a
-- trigger on the row's move from assigned to open: whoever writes that move, it happens.

CREATE TYPE dispatch_back_to_choice_document AS (
    worker_id text,
    reason text,
    applicants integer,
    choose_by text
);

ALTER TABLE offer_events DROP CONSTRAINT offer_events_type_valid;
ALTER TABLE offer_events ADD CONSTRAINT offer_events_type_valid
    CHECK (type IN ('offer.created', 'job.unfilled',
                    'application.created', 'application.withdrawn', 'job.back_to_choice'));

CREATE OR REPLACE FUNCTION dispatch_event(e offer_events) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    e.id, e.job_id, e.type, e.version, e.actor, dispatch_time(e.occurred_at),
    CASE e.type
      WHEN 'offer.created'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_offer_created_document, e.data))
      WHEN 'job.unfilled'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_job_unfilled_document, e.data))
      WHEN 'application.created'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_application_document, e.data))
      WHEN 'application.withdrawn'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_application_document, e.data))
      WHEN 'job.back_to_choice'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_back_to_choice_document, e.data))
    END
  )::dispatch_event_document)
$$;

CREATE FUNCTION jobs_back_to_choice() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  remaining integer;
BEGIN
  IF NEW.choose_within_s IS NOT NULL AND NOT NEW.auto_pick THEN
    NEW.choose_by := now() + make_interval(secs => NEW.choose_within_s);
  END IF;
  UPDATE job_applications SET withdrawn_at = now()
   WHERE job_id = NEW.id AND worker_id = OLD.assignee_id AND withdrawn_at IS NULL;
  SELECT count(*) INTO remaining FROM job_applications
   WHERE job_id = NEW.id AND withdrawn_at IS NULL;
  INSERT INTO offer_events (job_id, type, version, actor, occurred_at, data)
  VALUES (NEW.id, 'job.back_to_choice', NEW.version, 'system', NEW.updated_at,
          jsonb_build_object(
              'worker_id', OLD.assignee_id,
              -- a lease that had run out: vanished (the job's own event, job.reopened or
              -- job.released, says which move it was)
              'reason', CASE WHEN OLD.lease_expires_at <= now() THEN 'vanished'
                             ELSE 'released' END,
              'applicants', remaining,
              'choose_by', dispatch_time(NEW.choose_by)));
  RETURN NEW;
END
$$;
CREATE TRIGGER jobs_back_to_choice
    BEFORE UPDATE OF status ON jobs
    FOR EACH ROW
    WHEN (OLD.status = 'assigned' AND NEW.status = 'open'
          AND NEW.assignment = 'business_choice')
    EXECUTE FUNCTION jobs_back_to_choice();
