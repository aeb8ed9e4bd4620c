"""History for a database: N days of the seed's load in their final state, and the current state.

    python -m bench.history_load URL --days 30 [--jobs-per-day 50000]

Each day is a few set-based statements (INSERT ... SELECT generate_series), one transaction a
day, through the schema's own constraints and triggers: a job is inserted open with its window
still ahead, offered and applied to while open (job_offers_only_while_open,
job_applications_only_while_choosing), assigned to an applicant (jobs_choice_goes_to_an_applicant),
given its photos by its holder (jobs_photo_owned_by_assignee, jobs_photo_slots_frozen), and only
then moved to its final status with its real, past window. Its events are what the product's
statements write: `dispatch_job(j)` of the job at each version, ids that are UUIDv7 of the time
they happened (the console's last hour reads them by id), published. A schema change that the
loader no longer fits fails here, not silently (tests/bench/test_history_bench.py).

The history's last day of offers is then folded into the answers' records (`fold`), as the
sweeper would have folded them while it happened.

The current state (`current`) is the same whatever the history: live jobs, a few due choice jobs
with applicants, expired leases, workers, push connections.
"""

import argparse
import time
from collections.abc import Callable

from dispatch import db
from dispatch.offers import market
from dispatch_local.past import UUID7_AT

JOBS_PER_DAY = 50_000
VERSION = 2  # of what the loader writes: a history database of another version is loaded anew
WORKERS = 5_000
BUSINESSES = 500
OFFERS_PER_JOB = 6  # first-come jobs; a choice job is offered to its applicants' share
APPLICANTS = 3  # per choice job
CHOICE_SHARE = 0.15
METRO = (12.97, 77.59)

# A job's story: its event types in version order (its version is the last one). Shares of a
# day's jobs, cumulative bounds in `story` below. A second holder follows a lease that ran out
# (reopened) or a job given back (released): the event before names the first holder.
STORIES: dict[str, tuple[str, ...]] = {
    "completed": ("job.created", "job.assigned", "job.photo_attached", "job.started",
                  "job.photo_attached", "job.completed"),
    "rated": ("job.created", "job.assigned", "job.photo_attached", "job.started",
              "job.photo_attached", "job.completed", "job.rated"),
    "reopened": ("job.created", "job.assigned", "job.reopened", "job.assigned",
                 "job.photo_attached", "job.started", "job.photo_attached", "job.completed"),
    "released": ("job.created", "job.assigned", "job.released", "job.assigned",
                 "job.photo_attached", "job.started", "job.photo_attached", "job.completed"),
    "cancelled": ("job.created", "job.cancelled"),
    "expired": ("job.created", "job.expired"),
}  # fmt: skip
SHARES = {
    "completed": 0.42,
    "rated": 0.22,
    "reopened": 0.04,
    "released": 0.02,
    "cancelled": 0.12,
    "expired": 0.18,
}
FINAL = {
    "completed": "completed",
    "rated": "completed",
    "reopened": "completed",
    "released": "completed",
    "cancelled": "cancelled",
    "expired": "expired",
}


WORKERS_SQL = """
INSERT INTO workers (id, skills, created_at, updated_at)
SELECT 'w-' || n, CASE WHEN mod(n, 3) = 0 THEN '{wash,wax}'::text[] ELSE '{wash}' END,
       now() - interval '400 days', now() - interval '400 days'
  FROM generate_series(1, %(workers)s) n
ON CONFLICT (id) DO NOTHING
"""


def _story_case() -> str:
    """SQL: a story name from a uniform `u` in [0, 1), by the cumulative shares."""
    bound, arms = 0.0, []
    for name, share in SHARES.items():
        bound += share
        arms.append(f"WHEN u < {bound:.4f} THEN '{name}'")
    return "CASE " + " ".join(arms) + " ELSE 'expired' END"


def _stories_values() -> str:
    rows = []
    for name, types in STORIES.items():
        array = "ARRAY[" + ", ".join(f"'{t}'" for t in types) + "]"
        rows.append(f"('{name}', '{FINAL[name]}', {array})")
    return "VALUES " + ", ".join(rows)


# One day's jobs, planned in a temporary table: who posts, where, when (a business-hours
# profile: most posted between 08:00 and 18:00 UTC), its story, its holders.
PLAN = f"""
-- A day is the same whatever else is loaded.
SELECT setseed(1.0 / (1 + %(day_number)s));
CREATE TEMP TABLE plan ON COMMIT DROP AS
SELECT pg_temp.uuid7_at(created_at) AS id, s.*, st.final, st.types,
       cardinality(st.types) AS version
  FROM (
    SELECT g, created_at, story, choice, business_id, worker, second_worker, lat, lng,
           created_at + interval '30 minutes' AS window_start,
           created_at + interval '3 hours' AS window_end
      FROM (
        SELECT g, %(day)s::timestamptz
                  + make_interval(secs => 8 * 3600 + 36000 * (random() + random()) / 2
                                          + (random() - 0.5) * 4 * 3600 * (mod(g, 5) = 0)::int)
                  AS created_at,
               {_story_case()} AS story,
               random() < {CHOICE_SHARE} AS choice,
               'b-' || (1 + floor(random() * {BUSINESSES})::int) AS business_id,
               1 + floor(random() * %(workers)s)::int AS worker,
               1 + floor(random() * %(workers)s)::int AS second_worker,
               {METRO[0]} + (random() - 0.5) * 0.36 AS lat,
               {METRO[1]} + (random() - 0.5) * 0.36 AS lng
          FROM (SELECT g, random() AS u FROM generate_series(1, %(jobs)s) g) r
      ) picked
  ) s
  JOIN ({_stories_values()}) AS st(name, final, types) ON st.name = s.story;
ALTER TABLE plan ADD COLUMN holder text, ADD COLUMN first_holder text;
-- The applicants of a choice job are its holder and two more; a first holder who vanished or
-- gave the job back is another worker (never the final one).
UPDATE plan SET holder = 'w-' || worker,
                first_holder = 'w-' || (1 + mod(second_worker + worker, %(workers)s));
-- A worker holds one live job at a time (jobs_one_live_job_per_worker): the day's completed
-- jobs are taken in turns, each worker's jobs one turn after another.
ALTER TABLE plan ADD COLUMN turn integer, ADD COLUMN before_photo uuid,
                 ADD COLUMN after_photo uuid;
UPDATE plan SET before_photo = pg_temp.uuid7_at(created_at + interval '40 minutes'),
                after_photo = pg_temp.uuid7_at(created_at + interval '80 minutes')
 WHERE final = 'completed';
UPDATE plan SET turn = t.turn
  FROM (SELECT id, row_number() OVER (PARTITION BY holder ORDER BY created_at) AS turn
          FROM plan WHERE final = 'completed') t
 WHERE t.id = plan.id;
CREATE INDEX ON plan (turn);
CREATE UNIQUE INDEX ON plan (id);
ANALYZE plan
"""

# Open, round 1, its window still ahead: what offers and applications need.
JOBS_OPEN = """
INSERT INTO jobs (id, business_id, lat, lng, skills, window_start, window_end, status,
                  version, assignment, auto_pick, choose_within_s, choose_by,
                  created_at, updated_at)
SELECT id, business_id, lat, lng, '{wash}', now() + interval '1 day', now() + interval '2 days',
       'open', 1, CASE WHEN choice THEN 'business_choice' ELSE 'first_come' END,
       CASE WHEN choice THEN mod(g, 2) = 0 END, CASE WHEN choice THEN 900 END,
       CASE WHEN choice THEN created_at + interval '15 minutes' END, created_at, created_at
  FROM plan
"""

# Round 1's waves and offers (first come): the holder among them, nearest first.
OFFERS = f"""
INSERT INTO offer_waves (job_id, job_version, wave, ran_at)
SELECT p.id, 1, w, p.created_at + w * interval '30 seconds'
  FROM plan p, generate_series(1, 2) w WHERE NOT p.choice;
INSERT INTO job_offers (id, job_id, worker_id, job_version, wave, distance_m, created_at)
SELECT pg_temp.uuid7_at(at), id, worker_id, 1, wave, distance_m, at FROM (
    SELECT p.id, o, CASE WHEN o = 1 THEN 'w-' || p.worker
                         ELSE 'w-' || (1 + mod(p.worker + o * 37, %(workers)s)) END AS worker_id,
           1 + (o > 3)::int AS wave, 200.0 * o + random() * 150 AS distance_m,
           p.created_at + (1 + (o > 3)::int) * interval '30 seconds' AS at
      FROM plan p, generate_series(1, {OFFERS_PER_JOB}) o
     WHERE NOT p.choice
) offers;
INSERT INTO job_declines (job_id, worker_id, declined_at)
SELECT o.job_id, o.worker_id, o.created_at + interval '40 seconds' FROM job_offers o
  JOIN plan p ON p.id = o.job_id
 WHERE o.worker_id <> 'w-' || p.worker AND random() < 0.3;
INSERT INTO offer_events (id, job_id, type, version, occurred_at, data, published_at, tx)
SELECT pg_temp.uuid7_at(o.created_at), o.job_id, 'offer.created', 1, o.created_at,
       jsonb_build_object('worker_id', o.worker_id,
                          'distance_m', round(o.distance_m::numeric, 1), 'wave', o.wave,
                          'radius_m', 3000, 'job', dispatch_job_summary(j),
                          'why', jsonb_build_object('policy', 'nearest', 'rank', 1,
                                                    'distance_m',
                                                    round(o.distance_m::numeric, 1),
                                                    'rating', NULL, 'min_rating', NULL)),
       o.created_at + interval '1 second', %(tx)s::xid8
  FROM job_offers o JOIN plan p ON p.id = o.job_id JOIN jobs j ON j.id = o.job_id
"""

# A choice job's applicants (its holder first), with their events.
APPLICATIONS = f"""
INSERT INTO job_applications (job_id, worker_id, applied_at)
SELECT p.id, CASE WHEN a = 1 THEN p.holder
                  WHEN a = 2 THEN p.first_holder
                  ELSE 'w-' || (1 + mod(p.worker + a * 101, %(workers)s)) END,
       p.created_at + a * interval '2 minutes'
  FROM plan p, generate_series(1, {APPLICANTS}) a
 WHERE p.choice
ON CONFLICT DO NOTHING;
INSERT INTO offer_events (id, job_id, type, version, actor, occurred_at, data, published_at,
                          tx)
SELECT pg_temp.uuid7_at(a.applied_at), a.job_id, 'application.created', 1, a.worker_id,
       a.applied_at, dispatch_application_json(a)::jsonb, a.applied_at + interval '1 second',
       %(tx)s::xid8
  FROM job_applications a JOIN plan p ON p.id = a.job_id
"""

# The expired ones' round ended unfilled.
UNFILLED = """
INSERT INTO offer_events (id, job_id, type, version, occurred_at, data, published_at, tx)
SELECT pg_temp.uuid7_at(p.window_end), p.id, 'job.unfilled', 1, p.window_end,
       jsonb_build_object('waves', 2, 'offered', 6), p.window_end + interval '1 second',
       %(tx)s::xid8
  FROM plan p WHERE p.final = 'expired'
"""

# Taken, through the triggers, one turn at a time: assigned to the final holder, who attaches
# the before photo, starts, attaches the after photo, and completes.
PHOTOS = """
INSERT INTO workers (id) SELECT DISTINCT holder FROM plan ON CONFLICT DO NOTHING;
INSERT INTO photos (id, owner_id, s3_key, content_type, created_at)
SELECT photo, p.holder, 'photos/' || p.id || '/' || slot, 'image/jpeg', at
  FROM plan p,
       LATERAL (VALUES (p.before_photo, 'before', p.created_at + interval '40 minutes'),
                       (p.after_photo, 'after', p.created_at + interval '80 minutes'))
           AS s(photo, slot, at)
 WHERE p.final = 'completed'
"""
TURNS = "SELECT coalesce(max(turn), 0) AS turns FROM plan"
TAKEN = """
UPDATE jobs j SET status = 'assigned', assignee_id = p.holder,
                  lease_expires_at = now() + interval '1 hour', version = 2
  FROM plan p WHERE p.id = j.id AND p.turn = %(turn)s;
UPDATE jobs j SET before_photo_id = p.before_photo
  FROM plan p WHERE p.id = j.id AND p.turn = %(turn)s;
UPDATE jobs j SET status = 'in_progress', lease_expires_at = NULL
  FROM plan p WHERE p.id = j.id AND p.turn = %(turn)s;
UPDATE jobs j SET after_photo_id = p.after_photo
  FROM plan p WHERE p.id = j.id AND p.turn = %(turn)s;
UPDATE jobs j SET status = 'completed'
  FROM plan p WHERE p.id = j.id AND p.turn = %(turn)s
"""

# The final status, its real (past) window and version; a rating moves the worker's record.
FINAL_SQL = """
UPDATE jobs j SET status = p.final, version = p.version,
                  window_start = p.window_start, window_end = p.window_end,
                  rating = CASE WHEN p.story = 'rated' THEN 3 + mod(p.g, 3) END,
                  updated_at = p.created_at + p.version * interval '20 minutes'
  FROM plan p WHERE p.id = j.id;
UPDATE workers w SET ratings = w.ratings + r.n, stars = w.stars + r.stars
  FROM (SELECT assignee_id, count(*) AS n, sum(rating) AS stars FROM jobs j
          JOIN plan p ON p.id = j.id WHERE j.rating IS NOT NULL GROUP BY 1) r
 WHERE w.id = r.assignee_id
"""

# Its events, one per version: the job as it was then (dispatch_job of the final row with the
# status, version and holder of that moment), by whom the product names.
EVENTS = """
INSERT INTO job_events (id, job_id, type, version, actor, occurred_at, data, published_at,
                        relayed_at, tx)
SELECT pg_temp.uuid7_at(at), id, type, v, actor, at, data, at + interval '1 second',
       at + interval '1 second', %(tx)s::xid8
  FROM (
    SELECT p.id, t.type, t.v,
           p.created_at + (t.v - 1) * interval '20 minutes' AS at,
           CASE WHEN t.type IN ('job.created', 'job.cancelled', 'job.rated') THEN p.business_id
                WHEN t.type = 'job.reopened' THEN 'system:lease-sweeper'
                WHEN t.type = 'job.expired' THEN 'system:lease-sweeper'
                WHEN t.type = 'job.assigned' AND p.choice THEN p.business_id
                WHEN t.v <= 3 AND p.story IN ('reopened', 'released') THEN p.first_holder
                ELSE p.holder END AS actor,
           dispatch_job(j) || jsonb_build_object(
               'status', CASE t.type WHEN 'job.created' THEN 'open'
                                     WHEN 'job.reopened' THEN 'open'
                                     WHEN 'job.released' THEN 'open'
                                     WHEN 'job.assigned' THEN 'assigned'
                                     WHEN 'job.photo_attached' THEN
                                          CASE WHEN t.v = p.version - 1 THEN 'in_progress'
                                               ELSE 'assigned' END
                                     WHEN 'job.started' THEN 'in_progress'
                                     ELSE p.final END,
               'version', t.v,
               'assignee_id', CASE
                   WHEN t.type IN ('job.created', 'job.reopened', 'job.released',
                                   'job.cancelled', 'job.expired') THEN NULL
                   WHEN t.v = 2 AND p.story IN ('reopened', 'released') THEN p.first_holder
                   ELSE p.holder END) AS data
      FROM plan p JOIN jobs j ON j.id = p.id,
           unnest(p.types) WITH ORDINALITY AS t(type, v)
  ) e
"""

# Keys kept for their TTL (24 h): what the last day of writes leaves after the sweeper's expiry.
KEYS = """
INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body, created_at)
SELECT p.business_id, 'post-' || p.id, md5(p.id::text), 201, '{}', p.created_at
  FROM plan p WHERE p.created_at > now() - interval '24 hours'
"""

# The day's jobs counted before the triggers and foreign keys look them up one row at a time:
# a plan made while the planner believed the table empty scans it for every row it checks.
STATISTICS = "ANALYZE jobs, photos"
BEFORE_TAKEN = (PLAN, JOBS_OPEN, STATISTICS, OFFERS, APPLICATIONS, UNFILLED, PHOTOS, STATISTICS)
# Round 1's losers: a share of the offered who did not decline tapped Accept a few seconds after
# the holder won it (job_races_lost_only_when_taken: the round's next version is job.assigned
# to another), as the accept's failure path records them.
LOST_RACES = """
INSERT INTO job_races_lost (job_id, worker_id, lost_at)
SELECT o.job_id, o.worker_id, won.occurred_at + interval '3 seconds'
  FROM plan p
  JOIN job_offers o ON o.job_id = p.id AND o.job_version = 1
  JOIN job_events won ON won.job_id = p.id AND won.version = 2 AND won.type = 'job.assigned'
 WHERE NOT p.choice AND won.data ->> 'assignee_id' <> o.worker_id
   AND NOT EXISTS (SELECT 1 FROM job_declines d
                    WHERE d.job_id = o.job_id AND d.worker_id = o.worker_id)
   AND random() < 0.2
"""

AFTER_TAKEN = (FINAL_SQL, EVENTS, LOST_RACES, KEYS)

# The current state, the same with or without history (its leases and deadlines hold for hours,
# so it stays the same while a long run measures): jobs posted in the last hours, open
# (first come and choice, a few past their deadline with applicants), held (some leases run
# out), in progress; workers online (push connections); the businesses' rosters; the market's
# last fit.
CURRENT = [
    """
CREATE TEMP TABLE now_plan ON COMMIT DROP AS
SELECT g, pg_temp.uuid7_at(now() - g * interval '7 seconds') AS id,
       now() - g * interval '7 seconds' AS created_at,
       CASE WHEN g <= 40 THEN 'due' WHEN g <= 80 THEN 'choosing' WHEN g <= 140 THEN 'lapsed'
            WHEN g <= 400 THEN 'assigned' WHEN g <= 550 THEN 'in_progress' ELSE 'open' END
           AS kind,
       'b-' || (1 + g % 500) AS business_id, 'w-cur-' || g AS holder,
       12.97 + ((g * 7919) % 1000 / 1000.0 - 0.5) * 0.36 AS lat,
       77.59 + ((g * 104729) % 1000 / 1000.0 - 0.5) * 0.36 AS lng
  FROM generate_series(1, 900) g;
INSERT INTO workers (id, skills) SELECT holder, '{wash}' FROM now_plan
ON CONFLICT (id) DO NOTHING;
INSERT INTO jobs (id, business_id, lat, lng, skills, window_start, window_end, status, version,
                  assignment, auto_pick, choose_within_s, choose_by, created_at, updated_at)
SELECT id, business_id, lat, lng, '{wash}', created_at, now() + interval '3 hours', 'open', 1,
       CASE WHEN kind IN ('due', 'choosing') THEN 'business_choice' ELSE 'first_come' END,
       CASE WHEN kind IN ('due', 'choosing') THEN g % 2 = 0 END,
       CASE WHEN kind IN ('due', 'choosing') THEN 900 END,
       CASE WHEN kind = 'due' THEN now() - interval '1 minute'
            WHEN kind = 'choosing' THEN now() + interval '2 hours' END,
       created_at, created_at
  FROM now_plan;
INSERT INTO job_applications (job_id, worker_id, applied_at)
SELECT p.id, 'w-' || (1 + mod(p.g * 37 + a, 5000)), p.created_at + a * interval '1 second'
  FROM now_plan p, generate_series(1, 3) a WHERE p.kind IN ('due', 'choosing');
INSERT INTO workers (id, skills)
SELECT worker_id, '{wash}' FROM job_applications a JOIN now_plan p ON p.id = a.job_id
ON CONFLICT (id) DO NOTHING;
INSERT INTO offer_events (job_id, type, version, actor, occurred_at, data)
SELECT a.job_id, 'application.created', 1, a.worker_id, a.applied_at,
       dispatch_application_json(a)::jsonb
  FROM job_applications a JOIN now_plan p ON p.id = a.job_id;
UPDATE jobs j SET status = 'assigned', assignee_id = p.holder, version = 2,
                  lease_expires_at = CASE WHEN p.kind = 'lapsed' THEN now() + interval '1 second'
                                          ELSE now() + interval '2 hours' END
  FROM now_plan p WHERE p.id = j.id AND p.kind IN ('lapsed', 'assigned', 'in_progress');
INSERT INTO photos (owner_id, s3_key, content_type)
SELECT holder, 'photos/' || id || '/before', 'image/jpeg' FROM now_plan
 WHERE kind = 'in_progress';
UPDATE jobs j SET before_photo_id = ph.id
  FROM now_plan p JOIN photos ph ON ph.s3_key = 'photos/' || p.id || '/before'
 WHERE p.id = j.id;
UPDATE jobs j SET status = 'in_progress', lease_expires_at = NULL, version = 4
  FROM now_plan p WHERE p.id = j.id AND p.kind = 'in_progress';
INSERT INTO job_events (job_id, type, version, actor, occurred_at, data, published_at)
SELECT j.id, t.type, t.v, CASE WHEN t.v = 1 THEN j.business_id ELSE p.holder END,
       p.created_at + t.v * interval '1 second',
       dispatch_job(j) || jsonb_build_object('version', t.v, 'status',
           CASE t.v WHEN 1 THEN 'open' WHEN 2 THEN 'assigned' WHEN 3 THEN 'assigned'
                    ELSE 'in_progress' END,
           'assignee_id', CASE WHEN t.v > 1 THEN p.holder END),
       p.created_at + t.v * interval '1 second' + interval '1 second'
  FROM now_plan p JOIN jobs j ON j.id = p.id,
       unnest(ARRAY['job.created', 'job.assigned', 'job.photo_attached', 'job.started'])
           WITH ORDINALITY AS t(type, v)
 WHERE t.v <= j.version;
INSERT INTO job_offers (job_id, worker_id, job_version, wave, distance_m)
SELECT p.id, 'w-' || (1 + (p.g * 13 + o) % 5000), 1, 1, 300.0 * o
  FROM now_plan p, generate_series(1, 3) o WHERE p.kind = 'open';
INSERT INTO offer_waves (job_id, job_version, wave)
SELECT id, 1, 1 FROM now_plan WHERE kind = 'open';
INSERT INTO offer_rounds_resumed (job_id, job_version, wave)
SELECT id, 1, 1 FROM now_plan WHERE kind = 'open' AND g % 10 = 0;
INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)
SELECT 'conn-' || n, 'w-' || n, '{worker}', now() + interval '1 hour'
  FROM generate_series(1, 800) n;
INSERT INTO push_connections (connection_id, caller_id, roles, expires_at)
VALUES ('conn-ops', 'ops', '{ops}', now() + interval '1 hour');
INSERT INTO rosters (business_id, worker_id, list)
SELECT 'b-' || b, 'w-' || (1 + mod(b * 17 + k, 5000)), 'favourite'
  FROM generate_series(1, 500) b, generate_series(1, 4) k
ON CONFLICT DO NOTHING;
INSERT INTO rosters (business_id, worker_id, list)
SELECT 'b-' || b, 'w-blocked-' || b, 'blocked' FROM generate_series(1, 500) b
ON CONFLICT DO NOTHING;
INSERT INTO idempotency_keys (principal, key, fingerprint, status_code, body, created_at)
SELECT business_id, 'post-' || id, md5(id::text), 201, '{}', created_at FROM now_plan;
INSERT INTO offer_market (area, door, half_distance_m, answers) VALUES (-1, 0.6, 2500, 400)
ON CONFLICT (area) DO UPDATE SET fitted_at = now()
""",
]
# The lapsed leases run out one second after they are written.
SETTLE_SECONDS = 1.2


def load(
    url: str,
    days: int,
    jobs_per_day: int = JOBS_PER_DAY,
    progress: Callable[[str], None] = lambda _: None,
) -> None:
    """`days` days of history (each a day before the one after it, `_day`), then the current
    state, ANALYZEd."""
    with db.connect(url) as conn:
        conn.execute(WORKERS_SQL, {"workers": WORKERS})
        conn.commit()
        horizon = _horizon(conn)
        for day in range(days, 0, -1):
            started = time.monotonic()
            with conn.transaction():
                conn.execute(UUID7_AT)
                params = {
                    "day": _day(conn, day),
                    "day_number": day,
                    "tx": str(horizon - day),
                    "jobs": jobs_per_day,
                    "workers": WORKERS,
                }
                for statement in _statements(BEFORE_TAKEN):
                    conn.execute(statement, params)
                turns = conn.execute(TURNS).fetchone()
                assert turns is not None
                # A turn is a few thousand jobs among all days': by their keys, not by a hash of
                # the whole table once per statement (a day's load grew with the days before).
                conn.execute("SET LOCAL enable_hashjoin = off")
                conn.execute("SET LOCAL enable_mergejoin = off")
                for turn in range(1, turns["turns"] + 1):
                    for statement in _statements((TAKEN,)):
                        conn.execute(statement, {"turn": turn})
                conn.execute("SET LOCAL enable_hashjoin = on")
                conn.execute("SET LOCAL enable_mergejoin = on")
                for statement in _statements(AFTER_TAKEN):
                    conn.execute(statement, params)
            progress(
                f"day -{day}: {jobs_per_day:,} jobs in {time.monotonic() - started:.1f} s "
                f"({days - day + 1}/{days})"
            )
        started = time.monotonic()
        progress(f"answers folded: {fold(conn):,} in {time.monotonic() - started:.1f} s")
        current(conn)
    analyze(url)


def fold(conn: db.Connection) -> int:
    """The history's answers folded, as the sweeper would have folded them while it happened
    (dispatch.offers.market.fold, batch after batch): its last day, every answer final (no
    settle: its jobs are finished). How many offers."""
    folded = 0
    while batch := market.fold(conn, settle_s=0):
        folded += batch
        conn.commit()
    return folded


def current(conn: db.Connection) -> None:
    """The current state: the same on an empty database and on one with history."""
    with conn.transaction():
        conn.execute(UUID7_AT)
        for statement in _statements(CURRENT):
            conn.execute(statement)
    time.sleep(SETTLE_SECONDS)


def _statements(steps: "tuple[str, ...] | list[str]") -> list[str]:
    """Each step's statements, one at a time (parameters bind to one statement only)."""
    return [part for step in steps for part in step.split(";\n") if part.strip()]


def analyze(url: str) -> None:
    with db.connect(url) as conn:
        conn.autocommit = True
        conn.execute("VACUUM ANALYZE")


def _horizon(conn: db.Connection) -> int:
    """The oldest transaction still running now. A past day's events carry a transaction id
    below it (`horizon - day`, in the days' order): they were written by transactions long
    finished, whatever else runs on the server (the event stream reads only the events of
    finished transactions; the loading transaction itself is not one of those while another
    session's transaction older than it runs)."""
    row = conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS xmin").fetchone()
    conn.commit()
    assert row is not None
    return int(row["xmin"])


def _day(conn: db.Connection, day: int) -> str:
    """The start of history's day `day`: 27 hours and `day - 1` days before the hour. The last
    day's business hours (08:00 to 18:00 of it) then fall 19 to 9 hours ago. They are inside the
    answers' window (`offer_history_seconds`, a day), which the fold reads, and every event of
    theirs (up to a window's end, three hours on) is in the past. Calendar days made the fold find
    nothing after 18:00 UTC, when yesterday's business hours ended more than a day ago."""
    row = conn.execute(
        """SELECT (date_trunc('hour', now()) - interval '27 hours'
                   - make_interval(days => %(d)s - 1))::text AS d""",
        {"d": day},
    ).fetchone()
    assert row is not None
    return str(row["d"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.history_load", description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("--days", type=int, default=1)
    parser.add_argument("--jobs-per-day", type=int, default=JOBS_PER_DAY)
    args = parser.parse_args(argv)
    load(args.url, args.days, args.jobs_per_day, progress=lambda line: print(line, flush=True))


if __name__ == "__main__":
    main()
