-- The public Job and the event envelope, written once, here: the API answers with these
-- documents and every event on the bus carries them, so the two cannot drift apart, and no
-- storage column (cells, flat lat/lng, window_start) ever leaks to a consumer.

-- Times as the API writes them: RFC 3339 in UTC with a Z, microseconds only when there are any
-- (as Python's isoformat does). NULL stays NULL.
CREATE FUNCTION dispatch_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
         || CASE WHEN date_part('microseconds', t)::bigint % 1000000 = 0 THEN ''
                 ELSE to_char(t AT TIME ZONE 'UTC', '.US') END
         || 'Z'
$$;

-- The Job as GET /jobs/{job_id} shows it (docs/api.md); a new field is added here and in the
-- Job model together (tests/integration/test_documents.py compares the two).
CREATE FUNCTION dispatch_job(j jobs) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', j.id,
    'status', j.status,
    'version', j.version,
    'business_id', j.business_id,
    'assignee_id', j.assignee_id,
    'location', jsonb_build_object('lat', j.lat, 'lng', j.lng),
    'skills', to_jsonb(j.skills),
    'window', jsonb_build_object('start', dispatch_time(j.window_start),
                                 'end', dispatch_time(j.window_end)),
    'lease_expires_at', dispatch_time(j.lease_expires_at),
    'before_photo_id', j.before_photo_id,
    'after_photo_id', j.after_photo_id,
    'created_at', dispatch_time(j.created_at),
    'updated_at', dispatch_time(j.updated_at))
$$;

-- The envelope of every event on the bus and in GET /jobs/{job_id}/events.
CREATE FUNCTION dispatch_event(e job_events) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object('id', e.id, 'job_id', e.job_id, 'type', e.type,
                            'version', e.version, 'actor', e.actor,
                            'occurred_at', dispatch_time(e.occurred_at), 'data', e.data)
$$;

CREATE FUNCTION dispatch_event(e offer_events) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object('id', e.id, 'job_id', e.job_id, 'type', e.type,
                            'version', e.version, 'actor', e.actor,
                            'occurred_at', dispatch_time(e.occurred_at), 'data', e.data)
$$;

-- Events written before this migration carried the storage row (to_jsonb of jobs): rewrite
-- them as the public Job at that version, so that the history reads the same throughout.
UPDATE job_events
   SET data = dispatch_job(jsonb_populate_record(NULL::jobs, data))
 WHERE data ? 'window_start';

-- The offers' job summary carried the window's times as Python wrote them; the same values,
-- written the way every document writes times.
UPDATE offer_events
   SET data = jsonb_set(data, '{job,window}', jsonb_build_object(
                 'start', dispatch_time((data #>> '{job,window,start}')::timestamptz),
                 'end', dispatch_time((data #>> '{job,window,end}')::timestamptz)))
 WHERE type = 'offer.created' AND data #> '{job,window}' IS NOT NULL;
