-- One accept (the last of 0049's duplicates): the keyed form was a second copy of the whole
-- statement with one more CTE. Now one function: the caller's idempotency key, when given,
-- is recorded with the answer in the same statement (a key already taken raises
-- idempotency_keys_pkey, and the statement undoes itself); without a key nothing is recorded.
-- Still an ordinary plpgsql function, so Postgres keeps its statement's plan per server
-- connection without a prepared statement (which RDS Proxy would pin the connection for).
-- The UPDATE's WHERE clause is the lock: of N concurrent claimers exactly one matches. The
-- claim: the lease runs p_lease_seconds, cut at the window's end (jobs_lease_within_window).
-- Every change writes its event in the same statement (job_events_one_per_change).
DROP FUNCTION dispatch_accept_job(text, text, uuid, integer, integer, text);
DROP FUNCTION dispatch_accept_job_keyed(
    text, integer, text, text, uuid, text, integer, text, integer, text);

CREATE FUNCTION dispatch_accept_job(
    p_actor text, p_event_type text, p_job_id uuid, p_lease_seconds integer,
    p_version integer, p_worker_id text,
    -- The caller's idempotency key and the answer's status, or NULL: no key to record.
    p_principal text DEFAULT NULL, p_key text DEFAULT NULL, p_fingerprint text DEFAULT NULL,
    p_answer_status integer DEFAULT NULL
) RETURNS TABLE (document json, answer text) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH changed AS (
      UPDATE jobs AS j
         SET status = 'assigned',
             assignee_id = p_worker_id,
             before_photo_id = NULL,  -- a retaken job starts without the last holder's evidence
             lease_expires_at = least(now() + make_interval(secs => p_lease_seconds), window_end),
             version = version + 1,
             updated_at = now()
       WHERE j.id = p_job_id
         AND (SELECT h.may_accept FROM dispatch_holding(j, p_worker_id, p_version) h)
      RETURNING j.*, dispatch_job_json(j) AS document
  ), event AS (
      INSERT INTO job_events (job_id, type, version, actor, occurred_at, data)
      SELECT id, p_event_type, version, p_actor, updated_at, document::jsonb FROM changed
  ), answers AS (
      SELECT changed.document, changed.document::text AS answer FROM changed
  ), answered AS (
      INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
      SELECT p_principal, p_key, p_fingerprint, p_answer_status, answer FROM answers
       WHERE p_key IS NOT NULL
  )
  SELECT answers.document, answers.answer FROM answers;
END
$$;
