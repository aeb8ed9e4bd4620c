"""The SQL of offer rounds, one statement per step, each with the rule it keeps."""

from typing import LiteralString

from dispatch.jobs.sql import LIVE

# The job, if it is still open in this round.
OPEN_JOB: LiteralString = """
SELECT dispatch_job_json(j) AS document FROM jobs j
 WHERE j.id = %(job_id)s AND j.status = 'open' AND j.version = %(version)s
   AND j.window_end > now()
"""
# The same, holding the row (FOR SHARE) until commit: an accept that commits first leaves
# nothing to lock; one that comes later waits for the offers to commit
# (job_offers_only_while_open, the database's own guard, locks the same way).
LOCK_OPEN_JOB: LiteralString = OPEN_JOB + "   FOR SHARE"

# A wave runs once per round: its row is the proof (offer_waves primary key).
START_WAVE: LiteralString = """
INSERT INTO offer_waves (job_id, job_version, wave)
VALUES (%(job_id)s, %(version)s, %(wave)s)
ON CONFLICT DO NOTHING
RETURNING wave
"""

# The candidates (nearest first, from Redis) filtered and ranked by Postgres; each chosen
# worker gets one job_offers row (job_offers_once_per_worker) and one offer.created event.
# Qualified: every skill, the rating the job asks for (none: below any), no live job, never
# offered or declined this job. Not offered again in the new round: whoever held the job just
# before it opened (whose lease ran out, or who released it), read from the previous event.
MAKE_OFFERS: LiteralString = f"""
WITH candidate AS (
    SELECT * FROM unnest(%(worker_ids)s::text[], %(distances)s::float8[])
        AS c(worker_id, distance_m)
), chosen AS (
    SELECT c.worker_id, c.distance_m
      FROM candidate c
      LEFT JOIN workers w ON w.id = c.worker_id
     WHERE coalesce(w.skills, '{{}}') @> %(skills)s::text[]
       AND (%(min_rating)s::numeric IS NULL OR w.rating >= %(min_rating)s::numeric)
       AND c.worker_id IS DISTINCT FROM
           (SELECT e.data ->> 'assignee_id' FROM job_events e
             WHERE e.job_id = %(job_id)s AND e.version = %(version)s - 1)
       AND NOT EXISTS (SELECT 1 FROM jobs live
                        WHERE live.assignee_id = c.worker_id
                          AND live.status IN {LIVE})
       AND NOT EXISTS (SELECT 1 FROM job_offers o
                        WHERE o.job_id = %(job_id)s AND o.worker_id = c.worker_id)
       AND NOT EXISTS (SELECT 1 FROM job_declines d
                        WHERE d.job_id = %(job_id)s AND d.worker_id = c.worker_id)
     ORDER BY floor(c.distance_m / %(tie_band_m)s), w.rating DESC NULLS LAST, c.distance_m
     LIMIT %(size)s
), offered AS (
    INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
    SELECT %(job_id)s, worker_id, %(version)s, %(wave)s, distance_m FROM chosen
    RETURNING worker_id, distance_m, created_at
)
INSERT INTO offer_events (job_id, type, version, occurred_at, data)
SELECT %(job_id)s, 'offer.created', %(version)s, created_at,
       jsonb_build_object('worker_id', worker_id, 'distance_m', round(distance_m::numeric, 1),
                          'wave', %(wave)s, 'radius_m', %(radius_m)s,
                          'job', (SELECT dispatch_job_summary(j) FROM jobs j
                                   WHERE j.id = %(job_id)s))
  FROM offered
RETURNING id
"""

# The final check: the job is still open in this round after every wave (one per round:
# offer_events_one_unfilled_per_round).
UNFILLED: LiteralString = """
INSERT INTO offer_events (job_id, type, version, data)
VALUES (%(job_id)s, 'job.unfilled', %(version)s,
        jsonb_build_object('waves', %(waves)s,
                           'offered', (SELECT count(*) FROM job_offers
                                        WHERE job_id = %(job_id)s AND job_version = %(version)s)))
"""

# The round's own small outbox: its events not yet on the bus, in the order written.
PENDING_EVENTS: LiteralString = """
SELECT dispatch_event(e) AS document FROM offer_events e
 WHERE e.job_id = %(job_id)s AND e.published_at IS NULL
 ORDER BY e.occurred_at, e.id
"""
MARK_PUBLISHED: LiteralString = """
UPDATE offer_events SET published_at = now() WHERE id = ANY(%(ids)s)
"""

# -- a worker's side ---------------------------------------------------------------------------

# The caller's offers whose job is still open in that round (and still takeable: its window
# has not ended, the worker did not decline it), newest first, as offer.created carried them,
# written in the model's field order (models.Offer).
OFFERS_OF_WORKER: LiteralString = """
SELECT row_to_json(offer) AS document
  FROM job_offers o
  JOIN jobs j ON j.id = o.job_id
 CROSS JOIN LATERAL (SELECT dispatch_job_summary_json(j) AS job,
                            round(o.distance_m::numeric, 1) AS distance_m,
                            o.wave,
                            dispatch_time(o.created_at) AS offered_at) offer
 WHERE o.worker_id = %(worker_id)s
   AND j.status = 'open' AND j.version = o.job_version AND j.window_end > now()
   AND NOT EXISTS (SELECT 1 FROM job_declines d
                    WHERE d.job_id = o.job_id AND d.worker_id = o.worker_id)
 ORDER BY o.created_at DESC
 LIMIT %(limit)s
"""

# "No" to a job, whether it was offered or only seen nearby: never offered to them again.
DECLINE: LiteralString = """
WITH job AS (SELECT id FROM jobs WHERE id = %(job_id)s),
declined AS (
    INSERT INTO job_declines (job_id, worker_id) SELECT id, %(worker_id)s FROM job
    ON CONFLICT DO NOTHING
)
SELECT EXISTS (SELECT 1 FROM job) AS found
"""

# The round's latest wave, when every worker offered in it has declined: the next wave need
# not wait out the interval.
WAVE_ALL_DECLINED: LiteralString = """
SELECT j.version, w.wave
  FROM jobs j
  JOIN LATERAL (SELECT max(ow.wave) AS wave FROM offer_waves ow
                 WHERE ow.job_id = j.id AND ow.job_version = j.version) w ON true
 WHERE j.id = %(job_id)s AND j.status = 'open' AND j.window_end > now()
   AND EXISTS (SELECT 1 FROM job_offers o
                WHERE o.job_id = j.id AND o.job_version = j.version AND o.wave = w.wave)
   AND NOT EXISTS (SELECT 1 FROM job_offers o
                    WHERE o.job_id = j.id AND o.job_version = j.version AND o.wave = w.wave
                      AND NOT EXISTS (SELECT 1 FROM job_declines d
                                       WHERE d.job_id = o.job_id AND d.worker_id = o.worker_id))
"""
