-- One form for every answer and every event: compact JSON with the keys in the model's field
-- order, as row_to_json writes a row of a declared type (the Job already is, since 0012). Until
-- now the event envelope and the offers' documents were jsonb, whose text has its own key
-- order (shortest key first) and spaces after every colon and comma, so an event's `data`
-- listed the Job's fields in another order than GET /jobs/{job_id}, and reads, writes and
-- events were spaced three ways. The stored data stays jsonb (queries read into it); these
-- functions write it out in the model's shape. A new field goes into its type here and into
-- the Python model together (tests/integration/test_one_form.py compares them).

-- What an offered worker needs to decide (jobs.models.JobSummary): the Job's own values.
CREATE TYPE dispatch_job_summary_document AS (
    id uuid,
    version integer,
    location dispatch_location,
    skills text[],
    "window" dispatch_window,
    min_rating double precision
);

-- offer.created's data (offers.models.OfferCreatedData) and job.unfilled's (JobUnfilledData).
-- Distances keep their one decimal (numeric), as GET /workers/me/offers and nearby write them.
CREATE TYPE dispatch_offer_created_document AS (
    worker_id text,
    distance_m numeric,
    wave integer,
    radius_m integer,
    job dispatch_job_summary_document
);
CREATE TYPE dispatch_job_unfilled_document AS (waves integer, offered integer);

-- The envelope of every event (events.Event).
CREATE TYPE dispatch_event_document AS (
    id uuid,
    job_id uuid,
    type text,
    version integer,
    actor text,
    occurred_at text,
    data json
);

CREATE FUNCTION dispatch_job_summary_json(j jobs) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    j.id,
    j.version,
    ROW(j.lat, j.lng)::dispatch_location,
    j.skills,
    ROW(dispatch_time(j.window_start), dispatch_time(j.window_end))::dispatch_window,
    j.min_rating::float8)::dispatch_job_summary_document)
$$;

-- Its jsonb form, as offer.created stores it.
CREATE OR REPLACE FUNCTION dispatch_job_summary(j jobs) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT dispatch_job_summary_json(j)::jsonb
$$;

-- The events, written out: the stored data read back into the shape of its model.
DROP FUNCTION dispatch_event(job_events);
DROP FUNCTION dispatch_event(offer_events);

CREATE FUNCTION dispatch_event(e job_events) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    e.id, e.job_id, e.type, e.version, e.actor, dispatch_time(e.occurred_at),
    row_to_json(jsonb_populate_record(NULL::dispatch_job_document, e.data))
  )::dispatch_event_document)
$$;

CREATE FUNCTION dispatch_event(e offer_events) RETURNS json
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT row_to_json(ROW(
    e.id, e.job_id, e.type, e.version, e.actor, dispatch_time(e.occurred_at),
    CASE e.type
      WHEN 'offer.created'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_offer_created_document, e.data))
      WHEN 'job.unfilled'
        THEN row_to_json(jsonb_populate_record(NULL::dispatch_job_unfilled_document, e.data))
    END
  )::dispatch_event_document)
$$;
