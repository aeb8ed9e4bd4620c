-- The other answer to "first come, or does the business choose?": a job posted with
-- assignment = 'business_choice' is not accepted; qualified workers apply (job_applications),
-- and the business assigns one of them. The assign is the accept's kind of statement (one
-- conditional UPDATE); the database refuses, whoever writes it, an assignment of a choice job
-- to anyone but one of its current applicants, and an application to a job that is not open
-- for choosing.

ALTER TABLE jobs
    ADD COLUMN assignment text NOT NULL DEFAULT 'first_come',
    ADD COLUMN auto_pick boolean,
    ADD COLUMN choose_within_s integer,
    ADD CONSTRAINT jobs_assignment_valid
        CHECK (assignment IN ('first_come', 'business_choice')),
    -- The choice's settings belong to choice jobs; a choice job always says whether it picks.
    ADD CONSTRAINT jobs_choice_settings_only_for_choice
        CHECK ((assignment = 'business_choice') = (auto_pick IS NOT NULL)
               AND (assignment = 'business_choice' OR choose_within_s IS NULL)),
    ADD CONSTRAINT jobs_choose_within_positive CHECK (choose_within_s > 0),
    -- Nothing picks without a deadline to pick at.
    ADD CONSTRAINT jobs_auto_pick_needs_a_deadline
        CHECK (NOT auto_pick OR choose_within_s IS NOT NULL);

CREATE TABLE job_applications (
    job_id uuid NOT NULL REFERENCES jobs (id),
    worker_id text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now(),
    note text,
    -- Set when the application ends: withdrawn by the worker, or (see migration 0025) the
    -- chosen worker gave the job back or let its lease run out.
    withdrawn_at timestamptz,
    PRIMARY KEY (job_id, worker_id),
    CONSTRAINT job_applications_note_length CHECK (char_length(note) <= 280)
);
-- A job's current applicants, the assign's and the listing's read.
CREATE INDEX job_applications_current ON job_applications (job_id) WHERE withdrawn_at IS NULL;

-- An application (a new one, or one taken up again after a withdrawal) only while the job is
-- open and the business chooses. FOR SHARE, as job_offers_only_while_open: an assign that
-- commits first leaves nothing to lock; one that comes later waits for this one.
CREATE FUNCTION job_applications_only_while_choosing() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM jobs
    WHERE id = NEW.job_id AND status = 'open' AND assignment = 'business_choice'
      AND window_end > now()
    FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'job % is not open for applications', NEW.job_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'job_applications_only_while_choosing';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER job_applications_only_while_choosing
    BEFORE INSERT OR UPDATE OF withdrawn_at ON job_applications
    FOR EACH ROW WHEN (NEW.withdrawn_at IS NULL)
    EXECUTE FUNCTION job_applications_only_while_choosing();

-- A choice job is assigned only to one of its current applicants (by the business, or by the
-- auto-pick): never by an accept, never to a worker who withdrew.
CREATE FUNCTION jobs_choice_goes_to_an_applicant() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM job_applications a
                  WHERE a.job_id = NEW.id AND a.worker_id = NEW.assignee_id
                    AND a.withdrawn_at IS NULL) THEN
    RAISE EXCEPTION 'job % is the business''s to choose: % is not one of its applicants',
                    NEW.id, NEW.assignee_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_choice_goes_to_an_applicant';
  END IF;
  RETURN NEW;
END
$$;
CREATE TRIGGER jobs_choice_goes_to_an_applicant
    BEFORE UPDATE OF status, assignee_id ON jobs
    FOR EACH ROW
    WHEN (NEW.assignment = 'business_choice' AND NEW.status = 'assigned'
          AND NEW.assignee_id IS DISTINCT FROM OLD.assignee_id)
    EXECUTE FUNCTION jobs_choice_goes_to_an_applicant();

-- A job's mode is fixed once posted (dispatch_app may not update these columns either).
-- The Job document: the mode and its settings, after the fields it had.
ALTER TYPE dispatch_job_document
    ADD ATTRIBUTE assignment text,
    ADD ATTRIBUTE auto_pick boolean,
    ADD ATTRIBUTE choose_within_s integer;

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
    j.choose_within_s)::dispatch_job_document)
$$;

-- Events stored before this migration carry no mode: they were first come.
CREATE OR REPLACE FUNCTION dispatch_event(e job_events) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    e.id, e.job_id, e.type, e.version, e.actor, dispatch_time(e.occurred_at),
    row_to_json(jsonb_populate_record(NULL::dispatch_job_document,
                                      '{"assignment": "first_come"}'::jsonb || e.data))
  )::dispatch_event_document)
$$;

-- Application events change nothing on the job (no version of their own), like the offer
-- round's: they go with them, carrying the job's version at the time.
CREATE TYPE dispatch_application_document AS (
    job_id uuid,
    worker_id text,
    applied_at text,
    note text
);

ALTER TABLE offer_events DROP CONSTRAINT offer_events_type_valid;
ALTER TABLE offer_events ADD CONSTRAINT offer_events_type_valid
    CHECK (type IN ('offer.created', 'job.unfilled',
                    'application.created', 'application.withdrawn'));

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
    END
  )::dispatch_event_document)
$$;

CREATE FUNCTION dispatch_application_json(a job_applications) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(a.job_id, a.worker_id, dispatch_time(a.applied_at),
                         a.note)::dispatch_application_document)
$$;

-- The applicant's record, for the business's choice: completed jobs (this index), gave back
-- (job.released by the worker) and vanished (a lease that ran out on them: job.reopened).
CREATE INDEX jobs_completed_by_worker ON jobs (assignee_id) WHERE status = 'completed';
CREATE INDEX job_events_released_by ON job_events (actor) WHERE type = 'job.released';
CREATE INDEX job_events_reopened ON job_events (job_id, version) WHERE type = 'job.reopened';

GRANT SELECT, INSERT ON job_applications TO dispatch_app;
GRANT UPDATE (applied_at, note, withdrawn_at) ON job_applications TO dispatch_app;
