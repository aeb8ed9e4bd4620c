"""The SQL of offer rounds, one statement per step, each with the rule it keeps."""

from typing import Any, TypedDict
from uuid import UUID

from dispatch.db import Answering, Query


class RoundParams(TypedDict):
    """A round of offers: the job and the version whose event opened the round."""

    job_id: UUID
    version: int


class Document(TypedDict):
    document: dict[str, Any]


# The job, if it is still open in this round.
OPEN_JOB: Query[RoundParams, Document] = Query("""
SELECT dispatch_job_json(j) AS document FROM jobs j
 WHERE j.id = %(job_id)s AND j.status = 'open' AND j.version = %(version)s
   AND j.window_end > now()
""")
# The same, holding the row (FOR SHARE) until commit: an accept that commits first leaves
# nothing to lock; one that comes later waits for the offers to commit
# (job_offers_only_while_open, the database's own guard, locks the same way).
LOCK_OPEN_JOB: Query[RoundParams, Document] = Query("""
SELECT dispatch_job_json(j) AS document FROM jobs j
 WHERE j.id = %(job_id)s AND j.status = 'open' AND j.version = %(version)s
   AND j.window_end > now()
   FOR SHARE
""")


# A wave runs once per round: its row is the proof (offer_waves primary key).
class WaveParams(RoundParams):
    wave: int


class StartedWave(TypedDict):
    wave: int


START_WAVE: Query[WaveParams, StartedWave] = Query("""
INSERT INTO offer_waves (job_id, job_version, wave)
VALUES (%(job_id)s, %(version)s, %(wave)s)
ON CONFLICT DO NOTHING
RETURNING wave
""")

# Who may be offered the job in this round is one rule, in SQL: dispatch_offerable (migration
# 0054: whoever may hold it by dispatch_holding's may_hold, never offered or declined this job,
# not its holder just before this round), from the candidates (nearest first, from Redis), for
# every policy (dispatch.offers.policy).


# The seed's policy (`nearest`): the offerable candidates nearest first, rating breaking ties
# within a band; each chosen worker gets one job_offers row (job_offers_once_per_worker) and
# one offer.created event, which says why (`why`: the distance, the ratings, the rank).
class MakeOffersParams(WaveParams):
    worker_ids: list[str]
    distances: list[float]
    size: int
    radius_m: int
    min_rating: float | None
    tie_band_m: int


class Made(TypedDict):
    id: UUID


MAKE_OFFERS: Query[MakeOffersParams, Made] = Query("""
WITH chosen AS (
    SELECT c.worker_id, c.distance_m, c.rating,
           row_number() OVER (ORDER BY floor(c.distance_m / %(tie_band_m)s),
                                       c.rating DESC NULLS LAST, c.distance_m) AS rank
      FROM dispatch_offerable(%(job_id)s::uuid, %(version)s::integer,
                              %(worker_ids)s::text[], %(distances)s::float8[]) c
     ORDER BY floor(c.distance_m / %(tie_band_m)s), c.rating DESC NULLS LAST, c.distance_m
     LIMIT %(size)s
), offered AS (
    INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
    SELECT %(job_id)s, worker_id, %(version)s, %(wave)s, distance_m FROM chosen
    RETURNING worker_id, distance_m, created_at
)
INSERT INTO offer_events (job_id, type, version, occurred_at, data)
SELECT %(job_id)s, 'offer.created', %(version)s, o.created_at,
       jsonb_build_object('worker_id', o.worker_id, 'distance_m', round(o.distance_m::numeric, 1),
                          'wave', %(wave)s, 'radius_m', %(radius_m)s::integer,
                          'job', (SELECT dispatch_job_summary(j) FROM jobs j
                                   WHERE j.id = %(job_id)s),
                          'why', jsonb_build_object(
                              'policy', 'nearest', 'rank', c.rank,
                              'distance_m', round(o.distance_m::numeric, 1),
                              'rating', c.rating, 'min_rating', %(min_rating)s::float8))
  FROM offered o JOIN chosen c USING (worker_id)
RETURNING id
""")

# How a worker answered an offer (decline, accept, lost_race, silence or pending; what became
# of an accept; how long it took) is one rule, in SQL: dispatch_offer_answer (migrations 0054,
# 0057), read by the records folded once (FOLD_ANSWERS) and by a worker's offers since
# (LIKELY_CANDIDATES). A lost race (job_races_lost: the worker tapped Accept and another won)
# counts as a yes, an accept, for the door and the answer pace, and not as a job taken: never
# in last_accept_at (idle since their last job), and tallied apart (lost_races) so that the
# policy's holds reads only the jobs they took.


# The market's answers by area (dispatch_market_area, migration 0058; -1: folded before areas)
# and distance band (%(band_m)s wide): how many answered offers, and how many said yes, folded
# once (FOLD_ANSWERS) and decayed to now. The sweeper fits each area's curve, and the
# deployment's, to them (dispatch.offers.market). A few dozen rows an area, however long
# history grows; the areas are the few metros a deployment serves.
class HistoryParams(TypedDict):
    history_s: int


class MarketBand(TypedDict):
    area: int
    band: int
    offers: float
    accepts: float


MARKET_ANSWERS: Query[HistoryParams, MarketBand] = Query("""
SELECT b.area, b.band, dispatch_decayed(b.offers, b.as_of, now(), %(history_s)s) AS offers,
       dispatch_decayed(b.accepts, b.as_of, now(), %(history_s)s) AS accepts
  FROM offer_market_bands b
 ORDER BY b.area, b.band
""")


# An area's curve (or the deployment's, area -1), one row an area (offer_market_pkey),
# replaced by each fit.
class SaveMarketParams(TypedDict):
    area: int
    door: float
    half_distance_m: float
    answers: int


SAVE_MARKET: Query[SaveMarketParams, None] = Query("""
INSERT INTO offer_market (area, door, half_distance_m, answers)
VALUES (%(area)s, %(door)s, %(half_distance_m)s, %(answers)s)
ON CONFLICT (area) DO UPDATE
   SET door = excluded.door, half_distance_m = excluded.half_distance_m,
       answers = excluded.answers, fitted_at = now()
""")

# The market's curve the `likely` policy reads an offer with is one rule, in SQL:
# dispatch_market_curve (migration 0058: the curve of the job's area, dispatch_market_area,
# once fit on %(min_answers)s answers, else the deployment's once it is, else the configured
# %(half_m)s and %(door)s; one row, planned as one).


# Each offer's answer folded once, into records kept as they change (migration 0048): the
# market's by its job's area and distance band (offer_market_bands, %(band_m)s wide; the job
# probed by its primary key for its position, migration 0058) and each worker's
# (worker_answers), each tally decayed to now (dispatch_decayed, tau %(history_s)s) and each
# answer weighted by its own age, so that MARKET_ANSWERS and LIKELY_CANDIDATES read a row
# instead of recounting a day of offers. The offers after the cursor (offer_answers_folded,
# locked: one fold at a time), oldest first through the primary key (uuid v7: creation order),
# at most %(batch)s, and no further back than the history; only those made %(settle_s)s ago or
# more, whose answer can no longer change (its silence ran out, and an accept's lease ended:
# market.settle_seconds), and whose transaction has long committed (an id range is then
# complete). Each answer by dispatch_offer_answer (one rule); one still `pending` then was overtaken
# (the job changed before the silence ran out) and is passed over, as the counts always did.
# A lost race counts in `accepts` (a yes) and in `lost_races`, never in last_accept_at.
# `expected` reads each offer with its area's curve standing now (dispatch_market_curve).
class CurveParams(HistoryParams):
    """The market's curve's parameters (dispatch_market_curve) and the answers' (silence,
    settling, decay)."""

    half_m: float
    door: float
    min_answers: int
    silence_s: float
    settle_s: int


class FoldParams(CurveParams):
    band_m: int
    batch: int


class Folded(TypedDict):
    folded: int


FOLD_ANSWERS: Query[FoldParams, Folded] = Query("""
WITH cursor AS (
    SELECT greatest(f.last_offer_id,
                    dispatch_uuid7_floor(now() - make_interval(secs => %(history_s)s))) AS after
      FROM offer_answers_folded f
       FOR UPDATE
), r AS (
    SELECT o.id, o.job_id, o.job_version, o.worker_id, o.distance_m, o.created_at
      FROM job_offers o
     WHERE o.id > (SELECT after FROM cursor)
       AND o.id < dispatch_uuid7_floor(now() - make_interval(secs => %(settle_s)s))
     ORDER BY o.id
     LIMIT %(batch)s
), answered AS (
    SELECT r.worker_id, r.distance_m, r.created_at, j.area, a.answer, a.ending, a.seconds,
           dispatch_decayed(1, r.created_at, now(), %(history_s)s) AS weight,
           1 / (1 + (r.distance_m / curve.half_m) ^ 2) AS near
      FROM r
     CROSS JOIN LATERAL (SELECT dispatch_market_area(j.lat, j.lng) AS area FROM jobs j
                          WHERE j.id = r.job_id LIMIT 1) j
     CROSS JOIN LATERAL dispatch_market_curve(j.area, %(half_m)s::float8, %(door)s::float8,
                                              %(min_answers)s::integer) curve
     CROSS JOIN LATERAL dispatch_offer_answer(r.job_id, r.job_version, r.worker_id,
                                              r.created_at, %(silence_s)s::float8) a
     WHERE a.answer <> 'pending'
), bands AS (
    INSERT INTO offer_market_bands AS b (area, band, offers, accepts, as_of)
    SELECT area, floor(distance_m / %(band_m)s)::int, sum(weight),
           coalesce(sum(weight) FILTER (WHERE answer IN ('accept', 'lost_race')), 0), now()
      FROM answered
     GROUP BY 1, 2
        ON CONFLICT (area, band) DO UPDATE
       SET offers = dispatch_decayed(b.offers, b.as_of, now(), %(history_s)s) + excluded.offers,
           accepts = dispatch_decayed(b.accepts, b.as_of, now(), %(history_s)s)
                     + excluded.accepts,
           as_of = now()
), workers AS (
    INSERT INTO worker_answers AS w (worker_id, offers, accepts, declines, silences, releases,
                                     leases_run_out, lost_races, expected, answer_s_sum,
                                     answer_s_count, last_accept_at, as_of)
    SELECT worker_id, sum(weight),
           coalesce(sum(weight) FILTER (WHERE answer IN ('accept', 'lost_race')), 0),
           coalesce(sum(weight) FILTER (WHERE answer = 'decline'), 0),
           coalesce(sum(weight) FILTER (WHERE answer = 'silence'), 0),
           coalesce(sum(weight) FILTER (WHERE ending = 'job.released'), 0),
           coalesce(sum(weight) FILTER (WHERE ending = 'job.reopened'), 0),
           coalesce(sum(weight) FILTER (WHERE answer = 'lost_race'), 0),
           sum(weight * near),
           coalesce(sum(weight * greatest(0, seconds)) FILTER (WHERE seconds IS NOT NULL), 0),
           coalesce(sum(weight) FILTER (WHERE seconds IS NOT NULL), 0),
           max(created_at) FILTER (WHERE answer = 'accept'), now()
      FROM answered
     GROUP BY worker_id
        ON CONFLICT (worker_id) DO UPDATE
       SET offers = dispatch_decayed(w.offers, w.as_of, now(), %(history_s)s) + excluded.offers,
           accepts = dispatch_decayed(w.accepts, w.as_of, now(), %(history_s)s)
                     + excluded.accepts,
           declines = dispatch_decayed(w.declines, w.as_of, now(), %(history_s)s)
                      + excluded.declines,
           silences = dispatch_decayed(w.silences, w.as_of, now(), %(history_s)s)
                      + excluded.silences,
           releases = dispatch_decayed(w.releases, w.as_of, now(), %(history_s)s)
                      + excluded.releases,
           leases_run_out = dispatch_decayed(w.leases_run_out, w.as_of, now(), %(history_s)s)
                            + excluded.leases_run_out,
           lost_races = dispatch_decayed(w.lost_races, w.as_of, now(), %(history_s)s)
                        + excluded.lost_races,
           expected = dispatch_decayed(w.expected, w.as_of, now(), %(history_s)s)
                      + excluded.expected,
           answer_s_sum = dispatch_decayed(w.answer_s_sum, w.as_of, now(), %(history_s)s)
                          + excluded.answer_s_sum,
           answer_s_count = dispatch_decayed(w.answer_s_count, w.as_of, now(), %(history_s)s)
                            + excluded.answer_s_count,
           last_accept_at = greatest(w.last_accept_at, excluded.last_accept_at),
           as_of = now()
), moved AS (
    UPDATE offer_answers_folded
       SET (last_offer_id, last_offer_at, folded_at) =
           (SELECT id, created_at, now() FROM r ORDER BY id DESC LIMIT 1)
     WHERE EXISTS (SELECT 1 FROM r)
)
SELECT count(*) AS folded FROM r
""")


# The `likely` policy's view of the nearest %(pool)s qualified candidates: what each did with
# their offers (dispatch_offer_answer), each answer weighted by its age (exp(-age / %(history_s)s)):
# their record folded so far (worker_answers, FOLD_ANSWERS, decayed to now) and their offers
# since (after the fold's cursor: the last few minutes, the latest %(recent)s at most) read
# live, so that a "no" counts at once. When the answers add up to more than %(recent)s, every
# count is scaled to %(recent)s (a worker's record weighs like their latest %(recent)s offers,
# so that the prior keeps its weight against it). The curve of the job's area reads them
# (dispatch_market_curve, dispatch_market_area). An accept that ended in job.released or
# job.reopened (the lease ran out) is counted too. A lost race is a yes (in `accepts`, and in
# `lost_races` so that holds leaves it out), never a job taken (not in since_accept_s).
# `expected` is how many yeses their offers' distances alone would predict (1 / (1 + (d /
# half)^2) each), so that a worker offered far jobs is not taken for a worker who says no.
# `round_declines`: the declines this job already had in this round. `since_offer_s`: since
# their last offer of any job (the policy's floor: a worker left out that long counts more).
class LikelyParams(RoundParams, CurveParams):
    worker_ids: list[str]
    distances: list[float]
    pool: int
    recent: int


class LikelyCandidate(TypedDict):
    worker_id: str
    distance_m: float
    rating: float | None
    offers: float
    accepts: float
    declines: float
    silences: float
    releases: float
    leases_run_out: float
    lost_races: float
    expected: float
    answer_s: float | None
    since_accept_s: float | None
    since_offer_s: float | None
    market_half_m: float
    market_door: float
    market_stands: bool
    round_declines: int


LIKELY_CANDIDATES: Query[LikelyParams, LikelyCandidate] = Query("""
WITH curve AS (
    SELECT c.* FROM jobs j
     CROSS JOIN LATERAL dispatch_market_curve(dispatch_market_area(j.lat, j.lng),
                                              %(half_m)s::float8, %(door)s::float8,
                                              %(min_answers)s::integer) c
     WHERE j.id = %(job_id)s
), folded AS (
    SELECT greatest(f.last_offer_id,
                    dispatch_uuid7_floor(now() - make_interval(secs => %(history_s)s))) AS after,
           greatest(f.last_offer_at, now() - make_interval(secs => %(history_s)s))
               - make_interval(secs => %(settle_s)s) AS after_at
      FROM offer_answers_folded f
     LIMIT 1  -- one row (offer_answers_folded_one_row), planned as one
), qualified AS (
    SELECT c.worker_id, c.distance_m, c.rating
      FROM dispatch_offerable(%(job_id)s::uuid, %(version)s::integer,
                              %(worker_ids)s::text[], %(distances)s::float8[]) c
     ORDER BY c.distance_m
     LIMIT %(pool)s
)
SELECT q.worker_id, q.distance_m, q.rating,
       h.offers * h.scale AS offers, h.accepts * h.scale AS accepts,
       h.declines * h.scale AS declines, h.silences * h.scale AS silences,
       h.releases * h.scale AS releases, h.leases_run_out * h.scale AS leases_run_out,
       h.lost_races * h.scale AS lost_races, h.expected * h.scale AS expected,
       h.answer_s_sum / nullif(h.answer_s_count, 0) AS answer_s,
       extract(epoch FROM now() - h.last_accept_at)::float8 AS since_accept_s,
       extract(epoch FROM now() - last_offer.created_at)::float8 AS since_offer_s,
       curve.half_m AS market_half_m, curve.door AS market_door, curve.stands AS market_stands,
       (SELECT count(*) FROM job_offers o JOIN job_declines d USING (job_id, worker_id)
         WHERE o.job_id = %(job_id)s AND o.job_version = %(version)s) AS round_declines
  FROM qualified q
 CROSS JOIN curve
 CROSS JOIN folded
  LEFT JOIN worker_answers wa ON wa.worker_id = q.worker_id
 CROSS JOIN LATERAL (
    SELECT coalesce(sum(t.weight) FILTER (WHERE a.answer <> 'pending'), 0) AS offers,
           coalesce(sum(t.weight) FILTER (WHERE a.answer IN ('accept', 'lost_race')), 0)
               AS accepts,
           coalesce(sum(t.weight) FILTER (WHERE a.answer = 'decline'), 0) AS declines,
           coalesce(sum(t.weight) FILTER (WHERE a.answer = 'silence'), 0) AS silences,
           coalesce(sum(t.weight) FILTER (WHERE a.ending = 'job.released'), 0) AS releases,
           coalesce(sum(t.weight) FILTER (WHERE a.ending = 'job.reopened'), 0) AS leases_run_out,
           coalesce(sum(t.weight) FILTER (WHERE a.answer = 'lost_race'), 0) AS lost_races,
           coalesce(sum(t.weight / (1 + (r.distance_m / curve.half_m) ^ 2))
                    FILTER (WHERE a.answer <> 'pending'), 0) AS expected,
           coalesce(sum(t.weight * greatest(0, a.seconds)), 0) AS answer_s_sum,
           coalesce(sum(t.weight) FILTER (WHERE a.seconds IS NOT NULL), 0) AS answer_s_count,
           max(r.created_at) FILTER (WHERE a.answer = 'accept') AS last_accept_at
      FROM (SELECT o.job_id, o.job_version, o.worker_id, o.distance_m, o.created_at
              FROM job_offers o
             WHERE o.worker_id = q.worker_id
               AND o.created_at > folded.after_at AND o.id > folded.after
             ORDER BY o.created_at DESC
             LIMIT %(recent)s) r
     CROSS JOIN LATERAL dispatch_offer_answer(r.job_id, r.job_version, r.worker_id,
                                              r.created_at, %(silence_s)s::float8) a
     CROSS JOIN LATERAL (SELECT dispatch_decayed(1, r.created_at, now(), %(history_s)s)
                            AS weight) t
 ) live
 CROSS JOIN LATERAL (
    SELECT o.*, coalesce(least(1, %(recent)s / nullif(o.offers, 0)), 1) AS scale
      FROM (SELECT coalesce(dispatch_decayed(wa.offers, wa.as_of, now(), %(history_s)s), 0)
                       + live.offers AS offers,
                   coalesce(dispatch_decayed(wa.accepts, wa.as_of, now(), %(history_s)s), 0)
                       + live.accepts AS accepts,
                   coalesce(dispatch_decayed(wa.declines, wa.as_of, now(), %(history_s)s), 0)
                       + live.declines AS declines,
                   coalesce(dispatch_decayed(wa.silences, wa.as_of, now(), %(history_s)s), 0)
                       + live.silences AS silences,
                   coalesce(dispatch_decayed(wa.releases, wa.as_of, now(), %(history_s)s), 0)
                       + live.releases AS releases,
                   coalesce(dispatch_decayed(wa.leases_run_out, wa.as_of, now(),
                                             %(history_s)s), 0)
                       + live.leases_run_out AS leases_run_out,
                   coalesce(dispatch_decayed(wa.lost_races, wa.as_of, now(), %(history_s)s), 0)
                       + live.lost_races AS lost_races,
                   coalesce(dispatch_decayed(wa.expected, wa.as_of, now(), %(history_s)s), 0)
                       + live.expected AS expected,
                   coalesce(dispatch_decayed(wa.answer_s_sum, wa.as_of, now(), %(history_s)s),
                            0) + live.answer_s_sum AS answer_s_sum,
                   coalesce(dispatch_decayed(wa.answer_s_count, wa.as_of, now(),
                                             %(history_s)s), 0)
                       + live.answer_s_count AS answer_s_count,
                   greatest(wa.last_accept_at, live.last_accept_at) AS last_accept_at) o
 ) h
  LEFT JOIN LATERAL (SELECT o.created_at FROM job_offers o  -- job_offers_of_worker: one probe
                      WHERE o.worker_id = q.worker_id
                      ORDER BY o.created_at DESC
                      LIMIT 1) last_offer ON true
 ORDER BY q.distance_m
""")


# The `likely` policy's choice, written like the seed's: one job_offers row per chosen worker
# (job_offers_once_per_worker) and one offer.created event, which also records why the worker
# was chosen (their ranking inputs, %(why)s, in the chosen order).
class MakeChosenParams(WaveParams):
    worker_ids: list[str]
    distances: list[float]
    why: list[str]
    radius_m: int


MAKE_CHOSEN_OFFERS: Query[MakeChosenParams, Made] = Query("""
WITH chosen AS (
    SELECT * FROM unnest(%(worker_ids)s::text[], %(distances)s::float8[], %(why)s::jsonb[])
        AS c(worker_id, distance_m, why)
), offered AS (
    INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
    SELECT %(job_id)s, worker_id, %(version)s, %(wave)s, distance_m FROM chosen
    RETURNING worker_id, distance_m, created_at
)
INSERT INTO offer_events (job_id, type, version, occurred_at, data)
SELECT %(job_id)s, 'offer.created', %(version)s, o.created_at,
       jsonb_build_object('worker_id', o.worker_id, 'distance_m', round(o.distance_m::numeric, 1),
                          'wave', %(wave)s, 'radius_m', %(radius_m)s::integer,
                          'job', (SELECT dispatch_job_summary(j) FROM jobs j
                                   WHERE j.id = %(job_id)s),
                          'why', c.why)
  FROM offered o JOIN chosen c USING (worker_id)
RETURNING id
""")


# The final check: the job is still open in this round after every wave (one per round:
# offer_events_one_unfilled_per_round). Not for a job the business chooses for: it is open
# by design until its deadline, which tells it instead (dispatch.choice.deadline).
class UnfilledParams(RoundParams):
    waves: int


UNFILLED: Query[UnfilledParams, None] = Query("""
INSERT INTO offer_events (job_id, type, version, data)
SELECT %(job_id)s, 'job.unfilled', %(version)s,
       jsonb_build_object('waves', %(waves)s::integer,
                          'offered', (SELECT count(*) FROM job_offers
                                       WHERE job_id = %(job_id)s AND job_version = %(version)s))
 WHERE (SELECT assignment FROM jobs WHERE id = %(job_id)s) = 'first_come'
""")


# Rounds that stalled: the job is still open at the version whose event opened the round
# (%(opening)s, already on the bus: the publisher started the round), its window has not ended,
# the final check has not run (no offer_waves row past the last wave, %(waves)s), and its last
# step (the latest wave, the sweeper's last resend of it, or the opening event when neither
# happened) is older than %(stalled_s)s. A wave message lost with its queue (the local
# stand-in under kill -9, or one dead-lettered in AWS) leaves a round there for good; the
# sweeper sends its next wave again, and once per stall period only (RECORD_RESUMED): a resend
# still waiting in a busy queue is not resent on every pass. A message that is only late does
# no harm: a wave runs once per round (offer_waves primary key).
class StalledParams(TypedDict):
    opening: list[str]
    waves: int
    stalled_s: int
    limit: int


class StalledRound(TypedDict):
    job_id: UUID
    version: int
    last_wave: int | None
    offer_first_to: str | None


STALLED_ROUNDS: Query[StalledParams, StalledRound] = Query("""
SELECT j.id AS job_id, j.version, w.wave AS last_wave,
       opened.data ->> 'offer_first_to' AS offer_first_to
  FROM jobs j
  JOIN job_events opened ON opened.job_id = j.id AND opened.version = j.version
 CROSS JOIN LATERAL (SELECT max(ow.wave) AS wave, max(ow.ran_at) AS ran_at FROM offer_waves ow
                      WHERE ow.job_id = j.id AND ow.job_version = j.version) w
  LEFT JOIN offer_rounds_resumed r ON r.job_id = j.id AND r.job_version = j.version
 WHERE j.status = 'open' AND j.window_end > now()
   AND opened.type = ANY(%(opening)s) AND opened.published_at IS NOT NULL
   AND coalesce(w.wave, 0) <= %(waves)s
   AND greatest(w.ran_at, r.resumed_at, opened.published_at)
       < now() - make_interval(secs => %(stalled_s)s)
 ORDER BY greatest(w.ran_at, r.resumed_at, opened.published_at)
 LIMIT %(limit)s
""")


# The rounds whose next wave the offer queue took from the sweeper (only those: an entry the
# queue refused is resent on the next pass), one row per round, so that STALLED_ROUNDS waits
# a stall period before it resends the same round.
class ResumedParams(TypedDict):
    job_ids: list[UUID]
    versions: list[int]
    waves: list[int]


RECORD_RESUMED: Query[ResumedParams, None] = Query("""
INSERT INTO offer_rounds_resumed (job_id, job_version, wave)
SELECT * FROM unnest(%(job_ids)s::uuid[], %(versions)s::integer[], %(waves)s::integer[])
    ON CONFLICT (job_id, job_version) DO UPDATE SET wave = excluded.wave, resumed_at = now()
""")

# -- a worker's side ---------------------------------------------------------------------------


# The caller's offers whose job is still open in that round (and still takeable: its window
# has not ended, the worker did not decline it), newest first, as offer.created carried them,
# written in the model's field order (models.Offer). Read back only to the oldest open job's
# posting (jobs_open_since, migration 0047): an older offer's job is no longer open.
class OffersOfWorkerParams(TypedDict):
    worker_id: str
    limit: int


OFFERS_OF_WORKER: Query[OffersOfWorkerParams, Document] = Query("""
SELECT row_to_json(offer) AS document
  FROM job_offers o
  JOIN jobs j ON j.id = o.job_id
 CROSS JOIN LATERAL (SELECT dispatch_job_summary_json(j) AS job,
                            round(o.distance_m::numeric, 1) AS distance_m,
                            o.wave,
                            dispatch_time(o.created_at) AS offered_at) offer
 WHERE o.worker_id = %(worker_id)s
   AND j.status = 'open' AND j.version = o.job_version AND j.window_end > now()
   AND o.created_at >= (SELECT min(created_at) FROM jobs WHERE status = 'open')
   AND NOT EXISTS (SELECT 1 FROM job_declines d
                    WHERE d.job_id = o.job_id AND d.worker_id = o.worker_id)
 ORDER BY o.created_at DESC
 LIMIT %(limit)s
""")


# "No" to a job, whether it was offered or only seen nearby: never offered to them again.
# Given the caller's key, the key with its answer (%(answer)s, made before: it says only which
# job was declined) when there was a job to decline.
class DeclineParams(Answering):
    job_id: UUID
    worker_id: str
    answer: str


class Found(TypedDict):
    found: bool


DECLINE: Query[DeclineParams, Found] = Query("""
WITH job AS (SELECT id FROM jobs WHERE id = %(job_id)s),
declined AS (
    INSERT INTO job_declines (job_id, worker_id) SELECT id, %(worker_id)s FROM job
    ON CONFLICT DO NOTHING
), answered AS (  -- given the caller's key, the key with this answer (else nothing)
    INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body)
    SELECT %(principal)s::text, %(key)s::text, %(fingerprint)s::text, %(answer_status)s::integer,
           %(answer)s::text
      FROM job
     WHERE %(key)s::text IS NOT NULL
)
SELECT EXISTS (SELECT 1 FROM job) AS found
""")


# The round's latest wave, when every worker offered in it has declined: the next wave need
# not wait out the interval.
class JobIdParams(TypedDict):
    job_id: UUID


class LatestWave(TypedDict):
    version: int
    wave: int


WAVE_ALL_DECLINED: Query[JobIdParams, LatestWave] = Query("""
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
""")
