-- The offers' rules, each once, in SQL (issue 36, point 2): until now three fragments of
-- Python text pasted into the statements that needed them (dispatch.offers.sql QUALIFIED,
-- CURVE, OFFER_ANSWER). Each is now a STABLE SQL function returning a table, which the planner
-- inlines where it is called in FROM (one SELECT, no SET clause, not STRICT), so each
-- statement keeps the plan it had with the fragment pasted in, and each statement is written
-- whole where it runs.

-- Who may be offered a job in a round, from the candidates (nearest first, from Redis):
-- whoever may hold it (dispatch_holding's may_hold: every skill, the rating the job asks for,
-- not blocked, no live job), never offered or declined this job, and not whoever held the job
-- just before this round's version opened it (whose lease ran out, or who released it), read
-- from that version's previous event. One rule for every policy (dispatch.offers.policy).
CREATE FUNCTION dispatch_offerable(
    p_job_id uuid, p_version integer, p_worker_ids text[], p_distances double precision[]
) RETURNS TABLE (worker_id text, distance_m double precision, rating double precision)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 24 AS $$
SELECT c.worker_id, c.distance_m, w.rating::float8
  FROM unnest(p_worker_ids, p_distances) AS c(worker_id, distance_m)
  JOIN jobs j ON j.id = p_job_id
  LEFT JOIN workers w ON w.id = c.worker_id
 CROSS JOIN LATERAL dispatch_holding(j, c.worker_id) h
 WHERE h.may_hold
   AND c.worker_id IS DISTINCT FROM
       (SELECT e.data ->> 'assignee_id' FROM job_events e
         WHERE e.job_id = p_job_id AND e.version = p_version - 1)
   AND NOT EXISTS (SELECT 1 FROM job_offers o
                    WHERE o.job_id = p_job_id AND o.worker_id = c.worker_id)
   AND NOT EXISTS (SELECT 1 FROM job_declines d
                    WHERE d.job_id = p_job_id AND d.worker_id = c.worker_id)
$$;

-- The market's curve the `likely` policy reads offers with: offer_market's, once fit on at
-- least p_min_answers answers, else the configured p_half_m and p_door. Always one row, and
-- planned as one: a row count guessed for an unanalyzed table (hundreds) multiplied every
-- candidate's and offer's cost until the plan was JIT-compiled, seconds of it.
CREATE FUNCTION dispatch_market_curve(
    p_half_m double precision, p_door double precision, p_min_answers integer
) RETURNS TABLE (half_m double precision, door double precision)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
SELECT coalesce(m.half_distance_m, p_half_m), coalesce(m.door, p_door)
  FROM (SELECT) one
  LEFT JOIN LATERAL (SELECT * FROM offer_market m WHERE m.answers >= p_min_answers
                      LIMIT 1) m ON true
$$;

-- How a worker answered one offer (of p_job_id at p_job_version, to p_worker_id, made at
-- p_offered_at), from what the product records and nothing else: a decline (job_declines), an
-- accept (the job's next version is job.assigned to them; job_events_one_per_change makes it
-- one look-up), or silence (neither, and the job stayed open p_silence_s after the offer, or
-- still is); else still pending. A lost accept race leaves no record: it reads as silence.
-- `ending`: what became of an accept (job.released, or job.reopened when the lease ran out);
-- `seconds`: from the offer to the answer. One rule for the records folded once (FOLD_ANSWERS:
-- the market's and each worker's) and for a worker's offers since (LIKELY_CANDIDATES). Each
-- look-up is a LATERAL with LIMIT 1 on a unique key, so it stays a probe of that key's index:
-- as plain joins the planner hashed all of job_declines for a batch of offers, a scan that
-- grew with history.
CREATE FUNCTION dispatch_offer_answer(
    p_job_id uuid, p_job_version integer, p_worker_id text, p_offered_at timestamptz,
    p_silence_s double precision
) RETURNS TABLE (answer text, ending text, seconds double precision)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
SELECT CASE
         WHEN d.worker_id IS NOT NULL THEN 'decline'
         WHEN taken.type = 'job.assigned' AND taken.data ->> 'assignee_id' = p_worker_id
           THEN 'accept'
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
$$;
