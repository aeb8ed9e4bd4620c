-- The current schema of the Dispatch database: GENERATED, do not edit.
-- Written by `make schema` from migrations/NNNN_*.sql (applied in order to an empty
-- database, then printed by pg_dump 18.4); tests/integration/test_schema_file.py fails
-- when it is stale. To change the schema, add a migration, then run `make schema`.
--
-- PostgreSQL database dump
--



SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET transaction_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: dispatch_application_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_application_document AS (
	job_id uuid,
	worker_id text,
	applied_at text,
	note text
);


--
-- Name: dispatch_back_to_choice_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_back_to_choice_document AS (
	worker_id text,
	reason text,
	applicants integer,
	choose_by text
);


--
-- Name: dispatch_event_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_event_document AS (
	id uuid,
	job_id uuid,
	type text,
	version integer,
	actor text,
	occurred_at text,
	data json
);


--
-- Name: dispatch_location; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_location AS (
	lat double precision,
	lng double precision
);


--
-- Name: dispatch_window; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_window AS (
	start text,
	"end" text
);


--
-- Name: dispatch_job_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_job_document AS (
	id uuid,
	status text,
	version integer,
	business_id text,
	assignee_id text,
	location public.dispatch_location,
	skills text[],
	"window" public.dispatch_window,
	min_rating double precision,
	lease_expires_at text,
	before_photo_id uuid,
	after_photo_id uuid,
	rating smallint,
	created_at text,
	updated_at text,
	assignment text,
	auto_pick boolean,
	choose_within_s integer,
	offer_first_to text
);


--
-- Name: dispatch_job_summary_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_job_summary_document AS (
	id uuid,
	version integer,
	location public.dispatch_location,
	skills text[],
	"window" public.dispatch_window,
	min_rating double precision
);


--
-- Name: dispatch_job_unfilled_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_job_unfilled_document AS (
	waves integer,
	offered integer,
	reason text,
	applicants integer
);


--
-- Name: dispatch_offer_reason_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_offer_reason_document AS (
	policy text,
	rank integer,
	supply integer,
	distance_m double precision,
	rating double precision,
	min_rating double precision,
	offers integer,
	accepts integer,
	declines integer,
	silences integer,
	releases integer,
	leases_run_out integer,
	answer_s double precision,
	idle_s integer,
	round_declines integer,
	chance double precision,
	soon double precision,
	score double precision,
	market_door double precision,
	half_distance_m double precision,
	lost_races integer,
	since_offer_s integer,
	left_out boolean,
	market_stands boolean,
	seat boolean
);


--
-- Name: dispatch_offer_created_document; Type: TYPE; Schema: public; Owner: -
--

CREATE TYPE public.dispatch_offer_created_document AS (
	worker_id text,
	distance_m numeric,
	wave integer,
	radius_m integer,
	job public.dispatch_job_summary_document,
	why public.dispatch_offer_reason_document
);


--
-- Name: dispatch_accept_job(text, text, uuid, integer, integer, text, text, text, text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_accept_job(p_actor text, p_event_type text, p_job_id uuid, p_lease_seconds integer, p_version integer, p_worker_id text, p_principal text DEFAULT NULL::text, p_key text DEFAULT NULL::text, p_fingerprint text DEFAULT NULL::text, p_answer_status integer DEFAULT NULL::integer) RETURNS TABLE(document json, answer text)
    LANGUAGE plpgsql
    AS $$
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


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: job_applications; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_applications (
    job_id uuid NOT NULL,
    worker_id text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL,
    note text,
    withdrawn_at timestamp with time zone,
    CONSTRAINT job_applications_note_length CHECK ((char_length(note) <= 280))
);


--
-- Name: dispatch_application_json(public.job_applications); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_application_json(a public.job_applications) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT row_to_json(ROW(a.job_id, a.worker_id, dispatch_time(a.applied_at),
                         a.note)::dispatch_application_document)
$$;


--
-- Name: dispatch_cap(double precision, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_cap(lat double precision, lng double precision, reach_m double precision) RETURNS box[]
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
    AS $$
DECLARE
  margin constant double precision := 1e-9;
  phi constant double precision := radians(round(lat * 1e9) / 1e9);
  lambda constant double precision := radians(round(lng * 1e9) / 1e9);
  angle constant double precision := greatest(reach_m, 1e-3) / 6371008.8 + margin;
  south constant double precision := asinh(tan(greatest(phi - angle, -pi() / 2)));
  north constant double precision := asinh(tan(least(phi + angle, pi() / 2)));
  half_width double precision;
  west double precision;
  east double precision;
BEGIN
  IF phi + angle >= pi() / 2 OR phi - angle <= -pi() / 2 THEN
    RETURN ARRAY[box(point(-pi(), CASE WHEN phi - angle <= -pi() / 2 THEN -1e3 ELSE south END),
                     point(pi(), CASE WHEN phi + angle >= pi() / 2 THEN 1e3 ELSE north END))];
  END IF;
  half_width := asin(least(1, sin(angle) / cos(phi))) + margin;
  west := lambda - half_width;
  east := lambda + half_width;
  IF west < -pi() THEN
    RETURN ARRAY[box(point(-pi(), south), point(east, north)),
                 box(point(west + 2 * pi(), south), point(pi(), north))];
  ELSIF east > pi() THEN
    RETURN ARRAY[box(point(west, south), point(pi(), north)),
                 box(point(-pi(), south), point(east - 2 * pi(), north))];
  END IF;
  RETURN ARRAY[box(point(west, south), point(east, north))];
END
$$;


--
-- Name: dispatch_decayed(double precision, timestamp with time zone, timestamp with time zone, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_decayed(value double precision, as_of timestamp with time zone, at timestamp with time zone, tau_s double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT CASE WHEN value < 1e-9 OR extract(epoch FROM at - as_of)::float8 > 40 * tau_s THEN 0
              ELSE value * exp(-extract(epoch FROM at - as_of)::float8 / tau_s) END
$$;


--
-- Name: dispatch_distance_m(double precision, double precision, double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_distance_m(lat1 double precision, lng1 double precision, lat2 double precision, lng2 double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  -- One expression, no FROM and not STRICT (least and greatest are not strict), so that
  -- the planner inlines it into the nearby query instead of calling it per row.
  SELECT 2 * 6371008.8 * asin(least(1, sqrt(greatest(0,
           (1 - cos(radians(round(lat2 * 1e9) / 1e9 - round(lat1 * 1e9) / 1e9))) / 2
           + cos(radians(round(lat1 * 1e9) / 1e9)) * cos(radians(round(lat2 * 1e9) / 1e9))
             * (1 - cos(radians(round(lng2 * 1e9) / 1e9 - round(lng1 * 1e9) / 1e9))) / 2))))
$$;


--
-- Name: dispatch_uuid7(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_uuid7() RETURNS uuid
    LANGUAGE sql PARALLEL SAFE
    AS $$
  SELECT encode(
           int8send((floor(ms)::bigint << 16) | x'7000'::int | floor((ms - floor(ms)) * 4096)::int)
           || substring(uuid_send(gen_random_uuid()) FROM 9),
           'hex')::uuid
    FROM (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms) AS now_ms
$$;


--
-- Name: job_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_events (
    id uuid DEFAULT public.dispatch_uuid7() NOT NULL,
    job_id uuid NOT NULL,
    type text NOT NULL,
    version integer NOT NULL,
    actor text NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    published_at timestamp with time zone,
    relay_claimed_until timestamp with time zone,
    tx xid8 DEFAULT pg_current_xact_id() NOT NULL,
    relayed_at timestamp with time zone,
    CONSTRAINT job_events_type_valid CHECK ((type = ANY (ARRAY['job.created'::text, 'job.assigned'::text, 'job.checked_in'::text, 'job.released'::text, 'job.reopened'::text, 'job.started'::text, 'job.completed'::text, 'job.cancelled'::text, 'job.photo_attached'::text, 'job.expired'::text, 'job.rated'::text]))),
    CONSTRAINT job_events_version_positive CHECK ((version > 0))
);


--
-- Name: COLUMN job_events.published_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.job_events.published_at IS 'when the publisher put the event on the bus';


--
-- Name: COLUMN job_events.relayed_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.job_events.relayed_at IS 'last send to the outbox queue; not a delivery';


--
-- Name: dispatch_event(public.job_events); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_event(e public.job_events) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT row_to_json(ROW(
    e.id, e.job_id, e.type, e.version, e.actor, dispatch_time(e.occurred_at),
    row_to_json(jsonb_populate_record(NULL::dispatch_job_document,
                                      '{"assignment": "first_come"}'::jsonb || e.data))
  )::dispatch_event_document)
$$;


--
-- Name: offer_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_events (
    id uuid DEFAULT public.dispatch_uuid7() NOT NULL,
    job_id uuid NOT NULL,
    type text NOT NULL,
    version integer NOT NULL,
    actor text DEFAULT 'system'::text NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    published_at timestamp with time zone,
    tx xid8 DEFAULT pg_current_xact_id() NOT NULL,
    relay_claimed_until timestamp with time zone,
    relayed_at timestamp with time zone,
    CONSTRAINT offer_events_type_valid CHECK ((type = ANY (ARRAY['offer.created'::text, 'job.unfilled'::text, 'application.created'::text, 'application.withdrawn'::text, 'job.back_to_choice'::text]))),
    CONSTRAINT offer_events_version_positive CHECK ((version > 0))
);


--
-- Name: COLUMN offer_events.published_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.offer_events.published_at IS 'when the publisher put the event on the bus';


--
-- Name: COLUMN offer_events.relayed_at; Type: COMMENT; Schema: public; Owner: -
--

COMMENT ON COLUMN public.offer_events.relayed_at IS 'last send to the outbox queue; not a delivery';


--
-- Name: dispatch_event(public.offer_events); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_event(e public.offer_events) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
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


--
-- Name: dispatch_finished(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_finished(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
SELECT status IN ('completed', 'cancelled', 'expired') $$;


--
-- Name: dispatch_mercator(double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_mercator(lat double precision, lng double precision) RETURNS point
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT point(radians(round(lng * 1e9) / 1e9), asinh(tan(radians(round(lat * 1e9) / 1e9))))
$$;


--
-- Name: jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.jobs (
    id uuid DEFAULT public.dispatch_uuid7() NOT NULL,
    business_id text NOT NULL,
    status text DEFAULT 'open'::text NOT NULL,
    version integer DEFAULT 1 NOT NULL,
    assignee_id text,
    lat double precision NOT NULL,
    lng double precision NOT NULL,
    skills text[] DEFAULT '{}'::text[] NOT NULL,
    window_start timestamp with time zone NOT NULL,
    window_end timestamp with time zone NOT NULL,
    lease_expires_at timestamp with time zone,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    before_photo_id uuid,
    after_photo_id uuid,
    min_rating numeric(3,2),
    rating smallint,
    mercator point GENERATED ALWAYS AS (public.dispatch_mercator(lat, lng)) STORED,
    assignment text DEFAULT 'first_come'::text NOT NULL,
    auto_pick boolean,
    choose_within_s integer,
    choose_by timestamp with time zone,
    offer_first_to text,
    CONSTRAINT jobs_assignee_iff_taken CHECK (((status = ANY (ARRAY['assigned'::text, 'in_progress'::text, 'completed'::text])) = (assignee_id IS NOT NULL))),
    CONSTRAINT jobs_assignment_valid CHECK ((assignment = ANY (ARRAY['first_come'::text, 'business_choice'::text]))),
    CONSTRAINT jobs_auto_pick_needs_a_deadline CHECK (((NOT auto_pick) OR (choose_within_s IS NOT NULL))),
    CONSTRAINT jobs_choice_settings_only_for_choice CHECK ((((assignment = 'business_choice'::text) = (auto_pick IS NOT NULL)) AND ((assignment = 'business_choice'::text) OR (choose_within_s IS NULL)))),
    CONSTRAINT jobs_choose_by_iff_deadline CHECK (((choose_by IS NULL) = (choose_within_s IS NULL))),
    CONSTRAINT jobs_choose_within_positive CHECK ((choose_within_s > 0)),
    CONSTRAINT jobs_lat_range CHECK (((lat >= ('-90'::integer)::double precision) AND (lat <= (90)::double precision))),
    CONSTRAINT jobs_lease_iff_assigned CHECK (((status = 'assigned'::text) = (lease_expires_at IS NOT NULL))),
    CONSTRAINT jobs_lease_within_window CHECK ((lease_expires_at <= window_end)),
    CONSTRAINT jobs_lng_range CHECK (((lng >= ('-180'::integer)::double precision) AND (lng <= (180)::double precision))),
    CONSTRAINT jobs_min_rating_range CHECK (((min_rating >= (1)::numeric) AND (min_rating <= (5)::numeric))),
    CONSTRAINT jobs_offer_first_to_valid CHECK ((offer_first_to = 'favourites'::text)),
    CONSTRAINT jobs_photo_gate CHECK ((((status <> 'in_progress'::text) OR (before_photo_id IS NOT NULL)) AND ((status <> 'completed'::text) OR ((before_photo_id IS NOT NULL) AND (after_photo_id IS NOT NULL))))),
    CONSTRAINT jobs_photos_differ CHECK (((before_photo_id IS NULL) OR (before_photo_id IS DISTINCT FROM after_photo_id))),
    CONSTRAINT jobs_rated_only_when_completed CHECK (((rating IS NULL) OR (status = 'completed'::text))),
    CONSTRAINT jobs_rating_stars CHECK (((rating >= 1) AND (rating <= 5))),
    CONSTRAINT jobs_skills_no_nulls CHECK ((array_position(skills, NULL::text) IS NULL)),
    CONSTRAINT jobs_status_valid CHECK ((status = ANY (ARRAY['open'::text, 'assigned'::text, 'in_progress'::text, 'completed'::text, 'cancelled'::text, 'expired'::text]))),
    CONSTRAINT jobs_version_positive CHECK ((version > 0)),
    CONSTRAINT jobs_window_in_rfc3339 CHECK (((window_start >= '0001-01-01 00:00:00+00'::timestamp with time zone) AND (window_end < '10000-01-01 00:00:00+00'::timestamp with time zone))),
    CONSTRAINT jobs_window_ordered CHECK ((window_start < window_end))
);


--
-- Name: dispatch_holding(public.jobs, text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_holding(j public.jobs, worker text, seen_version integer DEFAULT NULL::integer) RETURNS TABLE(first_come boolean, choice boolean, claimable boolean, open boolean, window_open boolean, at_version boolean, has_skills boolean, rated_enough boolean, not_blocked boolean, worker_free boolean, applicant boolean, qualified boolean, may_hold boolean, may_accept boolean, may_assign boolean, may_apply boolean, may_see boolean)
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT c.first_come, c.choice, c.claimable, c.open, c.window_open, c.at_version,
       c.has_skills, c.rated_enough, c.not_blocked, c.worker_free, c.applicant,
       c.has_skills AND c.rated_enough,
       c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.first_come AND c.claimable AND c.window_open AND c.at_version
           AND c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.choice AND c.claimable AND c.window_open AND c.at_version AND c.applicant
           AND c.has_skills AND c.rated_enough AND c.not_blocked AND c.worker_free,
       c.choice AND c.open AND c.window_open
           AND c.has_skills AND c.rated_enough AND c.not_blocked,
       c.open AND c.window_open AND c.has_skills AND c.rated_enough AND c.not_blocked
  FROM (
    SELECT j.assignment = 'first_come' AS first_come,
           j.assignment = 'business_choice' AS choice,
           (j.status = 'open' OR (j.status = 'assigned' AND j.lease_expires_at <= now()))
               AS claimable,
           j.status = 'open' AS open,
           j.window_end > now() AS window_open,
           (seen_version IS NULL OR j.version = seen_version) AS at_version,
           j.skills <@ coalesce((SELECT w.skills FROM workers w WHERE w.id = worker), '{}')
               AS has_skills,
           (j.min_rating IS NULL
            OR coalesce(j.min_rating <= (SELECT w.rating FROM workers w WHERE w.id = worker),
                        false)) AS rated_enough,
           NOT EXISTS (SELECT 1 FROM rosters r
                        WHERE r.business_id = j.business_id AND r.worker_id = worker
                          AND r.list = 'blocked') AS not_blocked,
           NOT EXISTS (SELECT 1 FROM jobs live
                        WHERE live.assignee_id = worker
                          AND dispatch_live(live.status)
                          AND live.id <> j.id) AS worker_free,
           EXISTS (SELECT 1 FROM job_applications a
                    WHERE a.job_id = j.id AND a.worker_id = worker
                      AND a.withdrawn_at IS NULL) AS applicant
  ) c
$$;


--
-- Name: dispatch_job(public.jobs); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_job(j public.jobs) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT dispatch_job_json(j)::jsonb
$$;


--
-- Name: dispatch_job_json(public.jobs); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_job_json(j public.jobs) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
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
    j.choose_within_s,
    j.offer_first_to)::dispatch_job_document)
$$;


--
-- Name: dispatch_job_summary(public.jobs); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_job_summary(j public.jobs) RETURNS jsonb
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT dispatch_job_summary_json(j)::jsonb
$$;


--
-- Name: dispatch_job_summary_json(public.jobs); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_job_summary_json(j public.jobs) RETURNS json
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT row_to_json(ROW(
    j.id,
    j.version,
    ROW(j.lat, j.lng)::dispatch_location,
    j.skills,
    ROW(dispatch_time(j.window_start), dispatch_time(j.window_end))::dispatch_window,
    j.min_rating::float8)::dispatch_job_summary_document)
$$;


--
-- Name: dispatch_live(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_live(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT status IN ('assigned', 'in_progress') $$;


--
-- Name: dispatch_lost_race(uuid, text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_lost_race(p_job_id uuid, p_worker_id text) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT EXISTS (SELECT 1 FROM job_offers o
                 JOIN job_events won ON won.job_id = o.job_id AND won.version = o.job_version + 1
                WHERE o.job_id = p_job_id AND o.worker_id = p_worker_id
                  AND won.type = 'job.assigned'
                  AND won.data ->> 'assignee_id' IS DISTINCT FROM p_worker_id)
$$;


--
-- Name: dispatch_market_area(double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_market_area(p_lat double precision, p_lng double precision) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT least(floor(p_lat + 90)::integer, 179) * 360 + floor(p_lng + 180)::integer % 360
$$;


--
-- Name: dispatch_market_curve(integer, double precision, double precision, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_market_curve(p_area integer, p_half_m double precision, p_door double precision, p_min_answers integer) RETURNS TABLE(half_m double precision, door double precision, stands boolean)
    LANGUAGE sql STABLE ROWS 1 PARALLEL SAFE
    AS $$
SELECT coalesce(m.half_distance_m, p_half_m), coalesce(m.door, p_door),
       m.half_distance_m IS NOT NULL
  FROM (SELECT) one
  LEFT JOIN LATERAL (SELECT m.half_distance_m, m.door FROM offer_market m
                      WHERE m.area IN (p_area, -1) AND m.answers >= p_min_answers
                      ORDER BY m.area = -1  -- the area's own first
                      LIMIT 1) m ON true
$$;


--
-- Name: dispatch_mercator_floor_m(double precision, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_mercator_floor_m(lat double precision, reach_m double precision) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
  SELECT (1 - 1e-9) * 6371008.8
         * cos(least(pi() / 2, abs(radians(round(lat * 1e9) / 1e9))
                               + greatest(reach_m, 1e-3) / 6371008.8))
$$;


--
-- Name: dispatch_nearby(double precision, double precision, double precision, text, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_nearby(at_lat double precision, at_lng double precision, radius_m double precision, worker text, wanted integer) RETURNS TABLE(document json, distance_m double precision)
    LANGUAGE plpgsql STABLE PARALLEL SAFE
    SET enable_sort TO 'off'
    SET enable_bitmapscan TO 'off'
    SET jit TO 'off'
    AS $$
DECLARE
  here constant point := dispatch_mercator(at_lat, at_lng);
  cap constant box[] := dispatch_cap(at_lat, at_lng, radius_m);
  floor_m constant double precision := dispatch_mercator_floor_m(at_lat, radius_m);
  origin point;
  kept jobs[] := '{}';
  kept_m double precision[] := '{}';
  kth_m double precision := 'Infinity';
  step record;
BEGIN
  FOR side IN 1 .. cardinality(cap) LOOP
    origin := CASE side WHEN 1 THEN here
                        ELSE point(here[0] - 2 * pi() * sign(here[0]), here[1]) END;
    FOR step IN
        SELECT j, dispatch_distance_m(at_lat, at_lng, j.lat, j.lng) AS metres,
               j.mercator <-> origin AS map_distance
          FROM jobs j
         WHERE j.status = 'open'  -- the index's predicate (jobs_open_mercator)
           AND j.mercator <@ cap[side]
           -- who may see it: dispatch_holding, checked only once a job is in reach
           AND (SELECT h.may_see FROM dispatch_holding(j, worker) h)
         ORDER BY j.mercator <-> origin
    LOOP
      EXIT WHEN step.map_distance * floor_m > least(kth_m, radius_m);
      CONTINUE WHEN step.metres > radius_m;
      kept := kept || step.j;
      kept_m := kept_m || step.metres;
      IF cardinality(kept_m) = wanted THEN
        kth_m := (SELECT max(m) FROM unnest(kept_m) m);
      END IF;
    END LOOP;
  END LOOP;
  IF cardinality(kept) = 0 THEN
    RETURN;  -- nothing in reach (open country, most often)
  END IF;
  RETURN QUERY
    SELECT dispatch_job_json(k), dispatch_distance_m(at_lat, at_lng, k.lat, k.lng) AS metres
      FROM unnest(kept) k
     ORDER BY metres
     LIMIT wanted;
END
$$;


--
-- Name: dispatch_offer_answer(uuid, integer, text, timestamp with time zone, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_offer_answer(p_job_id uuid, p_job_version integer, p_worker_id text, p_offered_at timestamp with time zone, p_silence_s double precision) RETURNS TABLE(answer text, ending text, seconds double precision)
    LANGUAGE sql STABLE ROWS 1 PARALLEL SAFE
    AS $$
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


--
-- Name: dispatch_offerable(uuid, integer, text[], double precision[]); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_offerable(p_job_id uuid, p_version integer, p_worker_ids text[], p_distances double precision[]) RETURNS TABLE(worker_id text, distance_m double precision, rating double precision)
    LANGUAGE sql STABLE ROWS 24 PARALLEL SAFE
    AS $$
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


--
-- Name: dispatch_relay_due(timestamp with time zone, timestamp with time zone, timestamp with time zone, timestamp with time zone, double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_relay_due(published_at timestamp with time zone, occurred_at timestamp with time zone, relayed_at timestamp with time zone, relay_claimed_until timestamp with time zone, p_resend_seconds double precision) RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
SELECT published_at IS NULL
   AND (relayed_at IS NULL
        OR relayed_at < now() - greatest(make_interval(secs => p_resend_seconds),
                                         least(relayed_at - occurred_at, interval '5 minutes')))
   AND (relay_claimed_until IS NULL OR relay_claimed_until < now())
$$;


--
-- Name: dispatch_time(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_time(t timestamp with time zone) RETURNS text
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT replace(to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), '.000000Z', 'Z')
$$;


--
-- Name: dispatch_unfinished(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_unfinished(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT status IN ('open', 'assigned', 'in_progress') $$;


--
-- Name: dispatch_untaken(text); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_untaken(status text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT status IN ('open', 'cancelled', 'expired') $$;


--
-- Name: dispatch_uuid7_floor(timestamp with time zone); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.dispatch_uuid7_floor(at timestamp with time zone) RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
  SELECT encode(int8send((floor(extract(epoch FROM at) * 1000)::bigint << 16) | x'7000'::int)
                || '\x8000000000000000'::bytea, 'hex')::uuid
$$;


--
-- Name: events_deleted_only_when_published(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.events_deleted_only_when_published() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'event % is not published yet: it stays in the outbox', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = TG_ARGV[0];
END
$$;


--
-- Name: job_applications_not_from_blocked(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.job_applications_not_from_blocked() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM rosters r JOIN jobs j ON j.business_id = r.business_id
              WHERE j.id = NEW.job_id AND r.worker_id = NEW.worker_id
                AND r.list = 'blocked') THEN
    RAISE EXCEPTION 'the business of job % blocked worker %', NEW.job_id, NEW.worker_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'job_applications_not_from_blocked';
  END IF;
  RETURN NEW;
END
$$;


--
-- Name: job_applications_only_while_choosing(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.job_applications_only_while_choosing() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: job_offers_only_while_open(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.job_offers_only_while_open() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  PERFORM 1 FROM jobs
    WHERE id = NEW.job_id AND status = 'open' AND version = NEW.job_version
    FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'job % is not open at version %', NEW.job_id, NEW.job_version
      USING ERRCODE = 'check_violation', CONSTRAINT = 'job_offers_only_while_open';
  END IF;
  RETURN NEW;
END
$$;


--
-- Name: job_races_lost_only_when_taken(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.job_races_lost_only_when_taken() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: jobs_back_to_choice(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_back_to_choice() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: jobs_choice_goes_to_an_applicant(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_choice_goes_to_an_applicant() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
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


--
-- Name: jobs_deleted_only_when_finished(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_deleted_only_when_finished() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'job % is %: only a finished job leaves', OLD.id, OLD.status
        USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_deleted_only_when_finished';
END
$$;


--
-- Name: jobs_expired_only_after_the_window(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_expired_only_after_the_window() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.window_end > now() THEN
        RAISE EXCEPTION 'job % cannot expire: its window ends at %', NEW.id, NEW.window_end
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_expired_only_after_the_window';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: jobs_held_only_within_the_window(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_held_only_within_the_window() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.window_end <= now() THEN
        RAISE EXCEPTION 'job %: its window ended at %; no lease, no start after it',
                        NEW.id, NEW.window_end
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_held_only_within_the_window';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: jobs_never_to_a_blocked_worker(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_never_to_a_blocked_worker() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM rosters r
              WHERE r.business_id = NEW.business_id AND r.worker_id = NEW.assignee_id
                AND r.list = 'blocked') THEN
    RAISE EXCEPTION 'business % blocked worker %', NEW.business_id, NEW.assignee_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_never_to_a_blocked_worker';
  END IF;
  RETURN NEW;
END
$$;


--
-- Name: jobs_photo_owned_by_assignee(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_photo_owned_by_assignee() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF (NEW.before_photo_id IS DISTINCT FROM OLD.before_photo_id AND NEW.before_photo_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.id = NEW.before_photo_id AND p.owner_id = NEW.assignee_id))
       OR (NEW.after_photo_id IS DISTINCT FROM OLD.after_photo_id AND NEW.after_photo_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.id = NEW.after_photo_id AND p.owner_id = NEW.assignee_id)) THEN
        RAISE EXCEPTION 'a photo of job % does not belong to its assignee', NEW.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_photo_owned_by_assignee';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: jobs_photo_slots_frozen(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_photo_slots_frozen() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF NEW.before_photo_id IS DISTINCT FROM OLD.before_photo_id AND OLD.status <> 'assigned' THEN
        RAISE EXCEPTION 'the before photo of job % is frozen in status %', OLD.id, OLD.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_before_photo_frozen';
    END IF;
    IF NEW.after_photo_id IS DISTINCT FROM OLD.after_photo_id AND OLD.status <> 'in_progress' THEN
        RAISE EXCEPTION 'the after photo of job % is frozen in status %', OLD.id, OLD.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_after_photo_frozen';
    END IF;
    RETURN NEW;
END
$$;


--
-- Name: jobs_rated_once(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.jobs_rated_once() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
    RAISE EXCEPTION 'job % is already rated', OLD.id
        USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_rated_once';
END
$$;


--
-- Name: worker_records_add(text, integer, integer, integer); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.worker_records_add(worker text, completed_by integer, released_by integer, vanished_by integer) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
  UPDATE worker_records
     SET completed = completed + completed_by,
         released = released + released_by,
         vanished = vanished + vanished_by
   WHERE worker_id = worker;
  IF NOT FOUND THEN
    INSERT INTO worker_records AS r (worker_id, completed, released, vanished)
    VALUES (worker, completed_by, released_by, vanished_by)
    ON CONFLICT (worker_id) DO UPDATE  -- a first fact of theirs written at the same time
       SET completed = r.completed + completed_by,
           released = r.released + released_by,
           vanished = r.vanished + vanished_by;
  END IF;
END
$$;


--
-- Name: worker_records_completed(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.worker_records_completed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.status = 'completed' AND OLD.assignee_id IS NOT NULL THEN
    PERFORM worker_records_add(OLD.assignee_id, -1, 0, 0);
  END IF;
  IF NEW.status = 'completed' AND NEW.assignee_id IS NOT NULL THEN
    PERFORM worker_records_add(NEW.assignee_id, 1, 0, 0);
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: worker_records_left(); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.worker_records_left() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'public', 'pg_temp'
    AS $$
DECLARE
  holder text;
BEGIN
  IF NEW.type = 'job.released' THEN
    PERFORM worker_records_add(NEW.actor, 0, 1, 0);
  ELSE
    SELECT before.data ->> 'assignee_id' INTO holder FROM job_events before
     WHERE before.job_id = NEW.job_id AND before.version = NEW.version - 1;
    IF holder IS NOT NULL THEN
      PERFORM worker_records_add(holder, 0, 0, 1);
    END IF;
  END IF;
  RETURN NULL;
END
$$;


--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    principal text NOT NULL,
    key text NOT NULL,
    fingerprint text NOT NULL,
    status_code integer,
    body text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT idempotency_keys_key_format CHECK ((key ~ '^[!-~]{1,255}$'::text)),
    CONSTRAINT idempotency_keys_status_range CHECK (((status_code >= 200) AND (status_code <= 499)))
);


--
-- Name: job_declines; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_declines (
    job_id uuid NOT NULL,
    worker_id text NOT NULL,
    declined_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: job_offers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_offers (
    id uuid DEFAULT public.dispatch_uuid7() NOT NULL,
    job_id uuid NOT NULL,
    worker_id text NOT NULL,
    job_version integer NOT NULL,
    wave integer NOT NULL,
    distance_m double precision NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT job_offers_distance_nonnegative CHECK ((distance_m >= (0)::double precision)),
    CONSTRAINT job_offers_wave_positive CHECK ((wave >= 0))
);


--
-- Name: job_races_lost; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_races_lost (
    job_id uuid NOT NULL,
    worker_id text NOT NULL,
    lost_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: offer_answers_folded; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_answers_folded (
    id boolean DEFAULT true NOT NULL,
    last_offer_id uuid,
    last_offer_at timestamp with time zone,
    folded_at timestamp with time zone,
    CONSTRAINT offer_answers_folded_one_row CHECK (id),
    CONSTRAINT offer_answers_folded_whole CHECK (((last_offer_id IS NULL) = (last_offer_at IS NULL)))
);


--
-- Name: offer_market; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_market (
    area integer NOT NULL,
    door double precision NOT NULL,
    half_distance_m double precision NOT NULL,
    answers integer NOT NULL,
    fitted_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT offer_market_answers_nonnegative CHECK ((answers >= 0)),
    CONSTRAINT offer_market_area_valid CHECK (((area >= '-1'::integer) AND (area <= 64799))),
    CONSTRAINT offer_market_door_is_a_chance CHECK (((door > (0)::double precision) AND (door <= (1)::double precision))),
    CONSTRAINT offer_market_half_distance_positive CHECK ((half_distance_m > (0)::double precision))
);


--
-- Name: offer_market_bands; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_market_bands (
    area integer NOT NULL,
    band integer NOT NULL,
    offers double precision NOT NULL,
    accepts double precision NOT NULL,
    as_of timestamp with time zone NOT NULL,
    CONSTRAINT offer_market_bands_accepts_within_offers CHECK ((accepts <= ((offers * (((1)::numeric + 0.000000001))::double precision) + (0.000000001)::double precision))),
    CONSTRAINT offer_market_bands_area_valid CHECK (((area >= '-1'::integer) AND (area <= 64799))),
    CONSTRAINT offer_market_bands_band_nonnegative CHECK ((band >= 0)),
    CONSTRAINT offer_market_bands_counts_nonnegative CHECK (((offers >= (0)::double precision) AND (accepts >= (0)::double precision)))
);


--
-- Name: offer_rounds_resumed; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_rounds_resumed (
    job_id uuid NOT NULL,
    job_version integer NOT NULL,
    wave integer NOT NULL,
    resumed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT offer_rounds_resumed_version_positive CHECK ((job_version > 0)),
    CONSTRAINT offer_rounds_resumed_wave_nonnegative CHECK ((wave >= 0))
);


--
-- Name: offer_waves; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.offer_waves (
    job_id uuid NOT NULL,
    job_version integer NOT NULL,
    wave integer NOT NULL,
    ran_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT offer_waves_version_positive CHECK ((job_version > 0)),
    CONSTRAINT offer_waves_wave_positive CHECK ((wave >= 0))
);


--
-- Name: photos; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.photos (
    id uuid DEFAULT public.dispatch_uuid7() NOT NULL,
    owner_id text NOT NULL,
    s3_key text NOT NULL,
    content_type text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT photos_content_type_image CHECK ((content_type = ANY (ARRAY['image/jpeg'::text, 'image/png'::text, 'image/heic'::text, 'image/webp'::text])))
);


--
-- Name: push_connections; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.push_connections (
    connection_id text NOT NULL,
    caller_id text NOT NULL,
    roles text[] NOT NULL,
    connected_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT push_connections_caller_present CHECK ((length(btrim(caller_id)) > 0)),
    CONSTRAINT push_connections_expire CHECK (((expires_at > connected_at) AND (expires_at <= (connected_at + '02:00:00'::interval)))),
    CONSTRAINT push_connections_id_shape CHECK ((connection_id ~ '^[A-Za-z0-9_=+/-]{1,128}$'::text)),
    CONSTRAINT push_connections_known_roles CHECK (((cardinality(roles) > 0) AND (roles <@ ARRAY['business'::text, 'worker'::text, 'ops'::text])))
);


--
-- Name: rosters; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rosters (
    business_id text NOT NULL,
    worker_id text NOT NULL,
    list text NOT NULL,
    added_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT rosters_list_valid CHECK ((list = ANY (ARRAY['favourite'::text, 'blocked'::text])))
);


--
-- Name: schema_migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.schema_migrations (
    version text NOT NULL,
    checksum text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: sweep_duties; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.sweep_duties (
    duty text NOT NULL,
    ran_at timestamp with time zone NOT NULL
);


--
-- Name: worker_answers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.worker_answers (
    worker_id text NOT NULL,
    offers double precision NOT NULL,
    accepts double precision NOT NULL,
    declines double precision NOT NULL,
    silences double precision NOT NULL,
    releases double precision NOT NULL,
    leases_run_out double precision NOT NULL,
    expected double precision NOT NULL,
    answer_s_sum double precision NOT NULL,
    answer_s_count double precision NOT NULL,
    last_accept_at timestamp with time zone,
    as_of timestamp with time zone NOT NULL,
    lost_races double precision DEFAULT 0 NOT NULL,
    CONSTRAINT worker_answers_counts_nonnegative CHECK (((offers >= (0)::double precision) AND (accepts >= (0)::double precision) AND (declines >= (0)::double precision) AND (silences >= (0)::double precision) AND (releases >= (0)::double precision) AND (leases_run_out >= (0)::double precision) AND (expected >= (0)::double precision) AND (answer_s_sum >= (0)::double precision) AND (answer_s_count >= (0)::double precision))),
    CONSTRAINT worker_answers_kinds_within_offers CHECK ((((accepts + declines) + silences) <= ((offers * (((1)::numeric + 0.000000001))::double precision) + (0.000000001)::double precision))),
    CONSTRAINT worker_answers_lost_races_within_accepts CHECK (((lost_races >= (0)::double precision) AND (lost_races <= ((accepts * (((1)::numeric + 0.000000001))::double precision) + (0.000000001)::double precision))))
);


--
-- Name: worker_records; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.worker_records (
    worker_id text NOT NULL,
    completed integer DEFAULT 0 NOT NULL,
    released integer DEFAULT 0 NOT NULL,
    vanished integer DEFAULT 0 NOT NULL,
    CONSTRAINT worker_records_counts_nonnegative CHECK (((completed >= 0) AND (released >= 0) AND (vanished >= 0)))
);


--
-- Name: workers; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.workers (
    id text NOT NULL,
    skills text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    ratings integer DEFAULT 0 NOT NULL,
    stars integer DEFAULT 0 NOT NULL,
    rating numeric(3,2) GENERATED ALWAYS AS (
CASE
    WHEN (ratings = 0) THEN NULL::numeric
    ELSE round(((((5)::numeric * 4.0) + (stars)::numeric) / ((5 + ratings))::numeric), 2)
END) STORED,
    CONSTRAINT workers_ratings_counted CHECK (((ratings >= 0) AND ((stars >= ratings) AND (stars <= (5 * ratings))))),
    CONSTRAINT workers_skills_no_nulls CHECK ((array_position(skills, NULL::text) IS NULL))
);


--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (principal, key);


--
-- Name: job_applications job_applications_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_applications
    ADD CONSTRAINT job_applications_pkey PRIMARY KEY (job_id, worker_id);


--
-- Name: job_declines job_declines_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_declines
    ADD CONSTRAINT job_declines_pkey PRIMARY KEY (job_id, worker_id);


--
-- Name: job_events job_events_one_per_change; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_events
    ADD CONSTRAINT job_events_one_per_change UNIQUE (job_id, version);


--
-- Name: job_events job_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_events
    ADD CONSTRAINT job_events_pkey PRIMARY KEY (id);


--
-- Name: job_offers job_offers_once_per_worker; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_offers
    ADD CONSTRAINT job_offers_once_per_worker UNIQUE (job_id, worker_id);


--
-- Name: job_offers job_offers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_offers
    ADD CONSTRAINT job_offers_pkey PRIMARY KEY (id);


--
-- Name: job_races_lost job_races_lost_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_races_lost
    ADD CONSTRAINT job_races_lost_pkey PRIMARY KEY (job_id, worker_id);


--
-- Name: jobs jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (id);


--
-- Name: offer_answers_folded offer_answers_folded_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_answers_folded
    ADD CONSTRAINT offer_answers_folded_pkey PRIMARY KEY (id);


--
-- Name: offer_events offer_events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_events
    ADD CONSTRAINT offer_events_pkey PRIMARY KEY (id);


--
-- Name: offer_market_bands offer_market_bands_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_market_bands
    ADD CONSTRAINT offer_market_bands_pkey PRIMARY KEY (area, band);


--
-- Name: offer_market offer_market_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_market
    ADD CONSTRAINT offer_market_pkey PRIMARY KEY (area);


--
-- Name: offer_rounds_resumed offer_rounds_resumed_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_rounds_resumed
    ADD CONSTRAINT offer_rounds_resumed_pkey PRIMARY KEY (job_id, job_version);


--
-- Name: offer_waves offer_waves_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_waves
    ADD CONSTRAINT offer_waves_pkey PRIMARY KEY (job_id, job_version, wave);


--
-- Name: photos photos_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.photos
    ADD CONSTRAINT photos_pkey PRIMARY KEY (id);


--
-- Name: photos photos_s3_key_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.photos
    ADD CONSTRAINT photos_s3_key_key UNIQUE (s3_key);


--
-- Name: push_connections push_connections_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.push_connections
    ADD CONSTRAINT push_connections_pkey PRIMARY KEY (connection_id);


--
-- Name: rosters rosters_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rosters
    ADD CONSTRAINT rosters_pkey PRIMARY KEY (business_id, worker_id);


--
-- Name: schema_migrations schema_migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.schema_migrations
    ADD CONSTRAINT schema_migrations_pkey PRIMARY KEY (version);


--
-- Name: sweep_duties sweep_duties_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.sweep_duties
    ADD CONSTRAINT sweep_duties_pkey PRIMARY KEY (duty);


--
-- Name: worker_answers worker_answers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.worker_answers
    ADD CONSTRAINT worker_answers_pkey PRIMARY KEY (worker_id);


--
-- Name: worker_records worker_records_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.worker_records
    ADD CONSTRAINT worker_records_pkey PRIMARY KEY (worker_id);


--
-- Name: workers workers_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.workers
    ADD CONSTRAINT workers_pkey PRIMARY KEY (id);


--
-- Name: idempotency_keys_created_at; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_created_at ON public.idempotency_keys USING btree (created_at);


--
-- Name: job_applications_current; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_applications_current ON public.job_applications USING btree (job_id) WHERE (withdrawn_at IS NULL);


--
-- Name: job_events_first_fills; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_events_first_fills ON public.job_events USING btree (occurred_at) WHERE ((type = 'job.assigned'::text) AND (version = 2));


--
-- Name: job_events_released_by; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_events_released_by ON public.job_events USING btree (actor) WHERE (type = 'job.released'::text);


--
-- Name: job_events_reopened; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_events_reopened ON public.job_events USING btree (job_id, version) WHERE (type = 'job.reopened'::text);


--
-- Name: job_events_stream; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_events_stream ON public.job_events USING btree (tx, id);


--
-- Name: job_events_unpublished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_events_unpublished ON public.job_events USING btree (occurred_at) WHERE (published_at IS NULL);


--
-- Name: job_offers_of_worker; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_offers_of_worker ON public.job_offers USING btree (worker_id, created_at DESC);


--
-- Name: jobs_by_after_photo; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_by_after_photo ON public.jobs USING btree (after_photo_id) WHERE (after_photo_id IS NOT NULL);


--
-- Name: jobs_by_before_photo; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_by_before_photo ON public.jobs USING btree (before_photo_id) WHERE (before_photo_id IS NOT NULL);


--
-- Name: jobs_choice_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_choice_due ON public.jobs USING btree (choose_by) WHERE ((status = 'open'::text) AND (assignment = 'business_choice'::text));


--
-- Name: jobs_completed_by_worker; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_completed_by_worker ON public.jobs USING btree (assignee_id) WHERE (status = 'completed'::text);


--
-- Name: jobs_lease_expiry; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_lease_expiry ON public.jobs USING btree (lease_expires_at) WHERE (status = 'assigned'::text);


--
-- Name: jobs_live_by_place; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_live_by_place ON public.jobs USING btree (lat, lng) WHERE (status = ANY (ARRAY['open'::text, 'assigned'::text, 'in_progress'::text]));


--
-- Name: jobs_live_by_status; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_live_by_status ON public.jobs USING btree (status) WHERE (status = ANY (ARRAY['open'::text, 'assigned'::text, 'in_progress'::text]));


--
-- Name: jobs_one_live_job_per_worker; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX jobs_one_live_job_per_worker ON public.jobs USING btree (assignee_id) WHERE (status = ANY (ARRAY['assigned'::text, 'in_progress'::text]));


--
-- Name: jobs_open_mercator; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_open_mercator ON public.jobs USING gist (mercator) WHERE (status = 'open'::text);


--
-- Name: jobs_open_since; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_open_since ON public.jobs USING btree (created_at) WHERE (status = 'open'::text);


--
-- Name: jobs_open_window_end; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_open_window_end ON public.jobs USING btree (window_end) WHERE (status = 'open'::text);


--
-- Name: jobs_recently_finished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX jobs_recently_finished ON public.jobs USING btree (updated_at) WHERE (status = ANY (ARRAY['completed'::text, 'cancelled'::text, 'expired'::text]));


--
-- Name: offer_events_of_job; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offer_events_of_job ON public.offer_events USING btree (job_id, version);


--
-- Name: offer_events_one_unfilled_per_round; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX offer_events_one_unfilled_per_round ON public.offer_events USING btree (job_id, version) WHERE (type = 'job.unfilled'::text);


--
-- Name: offer_events_stream; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offer_events_stream ON public.offer_events USING btree (tx, id);


--
-- Name: offer_events_unfilled; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offer_events_unfilled ON public.offer_events USING btree (occurred_at) WHERE (type = 'job.unfilled'::text);


--
-- Name: offer_events_unpublished; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offer_events_unpublished ON public.offer_events USING btree (job_id) WHERE (published_at IS NULL);


--
-- Name: offer_events_unpublished_since; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX offer_events_unpublished_since ON public.offer_events USING btree (occurred_at) WHERE (published_at IS NULL);


--
-- Name: push_connections_caller; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX push_connections_caller ON public.push_connections USING btree (caller_id);


--
-- Name: push_connections_expires; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX push_connections_expires ON public.push_connections USING btree (expires_at);


--
-- Name: push_connections_ops; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX push_connections_ops ON public.push_connections USING btree (connection_id) WHERE ('ops'::text = ANY (roles));


--
-- Name: job_applications job_applications_not_from_blocked; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_applications_not_from_blocked BEFORE INSERT OR UPDATE OF withdrawn_at ON public.job_applications FOR EACH ROW WHEN ((new.withdrawn_at IS NULL)) EXECUTE FUNCTION public.job_applications_not_from_blocked();


--
-- Name: job_applications job_applications_only_while_choosing; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_applications_only_while_choosing BEFORE INSERT OR UPDATE OF withdrawn_at ON public.job_applications FOR EACH ROW WHEN ((new.withdrawn_at IS NULL)) EXECUTE FUNCTION public.job_applications_only_while_choosing();


--
-- Name: job_events job_events_deleted_only_when_published; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_events_deleted_only_when_published BEFORE DELETE ON public.job_events FOR EACH ROW WHEN ((old.published_at IS NULL)) EXECUTE FUNCTION public.events_deleted_only_when_published('job_events_deleted_only_when_published');


--
-- Name: job_offers job_offers_only_while_open; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_offers_only_while_open BEFORE INSERT ON public.job_offers FOR EACH ROW EXECUTE FUNCTION public.job_offers_only_while_open();


--
-- Name: job_races_lost job_races_lost_only_when_taken; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER job_races_lost_only_when_taken BEFORE INSERT ON public.job_races_lost FOR EACH ROW EXECUTE FUNCTION public.job_races_lost_only_when_taken();


--
-- Name: jobs jobs_back_to_choice; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_back_to_choice BEFORE UPDATE OF status ON public.jobs FOR EACH ROW WHEN (((old.status = 'assigned'::text) AND (new.status = 'open'::text) AND (new.assignment = 'business_choice'::text))) EXECUTE FUNCTION public.jobs_back_to_choice();


--
-- Name: jobs jobs_choice_goes_to_an_applicant; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_choice_goes_to_an_applicant BEFORE UPDATE OF status, assignee_id ON public.jobs FOR EACH ROW WHEN (((new.assignment = 'business_choice'::text) AND (new.status = 'assigned'::text) AND (new.assignee_id IS DISTINCT FROM old.assignee_id))) EXECUTE FUNCTION public.jobs_choice_goes_to_an_applicant();


--
-- Name: jobs jobs_deleted_only_when_finished; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_deleted_only_when_finished BEFORE DELETE ON public.jobs FOR EACH ROW WHEN ((old.status <> ALL (ARRAY['completed'::text, 'cancelled'::text, 'expired'::text]))) EXECUTE FUNCTION public.jobs_deleted_only_when_finished();


--
-- Name: jobs jobs_expired_only_after_the_window; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_expired_only_after_the_window BEFORE INSERT OR UPDATE OF status ON public.jobs FOR EACH ROW WHEN ((new.status = 'expired'::text)) EXECUTE FUNCTION public.jobs_expired_only_after_the_window();


--
-- Name: jobs jobs_held_only_within_the_window; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_held_only_within_the_window BEFORE UPDATE OF lease_expires_at, status ON public.jobs FOR EACH ROW WHEN (((new.lease_expires_at > old.lease_expires_at) OR ((new.lease_expires_at IS NOT NULL) AND (old.lease_expires_at IS NULL)) OR ((old.status = 'assigned'::text) AND (new.status = 'in_progress'::text)))) EXECUTE FUNCTION public.jobs_held_only_within_the_window();


--
-- Name: jobs jobs_never_to_a_blocked_worker; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_never_to_a_blocked_worker BEFORE UPDATE OF status, assignee_id ON public.jobs FOR EACH ROW WHEN (((new.status = 'assigned'::text) AND (new.assignee_id IS DISTINCT FROM old.assignee_id))) EXECUTE FUNCTION public.jobs_never_to_a_blocked_worker();


--
-- Name: jobs jobs_photo_owned_by_assignee; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_photo_owned_by_assignee BEFORE UPDATE ON public.jobs FOR EACH ROW WHEN (((old.before_photo_id IS DISTINCT FROM new.before_photo_id) OR (old.after_photo_id IS DISTINCT FROM new.after_photo_id))) EXECUTE FUNCTION public.jobs_photo_owned_by_assignee();


--
-- Name: jobs jobs_photo_slots_frozen; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_photo_slots_frozen BEFORE UPDATE ON public.jobs FOR EACH ROW WHEN (((old.before_photo_id IS DISTINCT FROM new.before_photo_id) OR (old.after_photo_id IS DISTINCT FROM new.after_photo_id))) EXECUTE FUNCTION public.jobs_photo_slots_frozen();


--
-- Name: jobs jobs_rated_once; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER jobs_rated_once BEFORE UPDATE OF rating ON public.jobs FOR EACH ROW WHEN (((old.rating IS NOT NULL) AND (new.rating IS DISTINCT FROM old.rating))) EXECUTE FUNCTION public.jobs_rated_once();


--
-- Name: offer_events offer_events_deleted_only_when_published; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER offer_events_deleted_only_when_published BEFORE DELETE ON public.offer_events FOR EACH ROW WHEN ((old.published_at IS NULL)) EXECUTE FUNCTION public.events_deleted_only_when_published('offer_events_deleted_only_when_published');


--
-- Name: jobs worker_records_completed; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER worker_records_completed AFTER INSERT OR UPDATE OF status, assignee_id ON public.jobs FOR EACH ROW WHEN ((new.status = 'completed'::text)) EXECUTE FUNCTION public.worker_records_completed();


--
-- Name: job_events worker_records_left; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER worker_records_left AFTER INSERT ON public.job_events FOR EACH ROW WHEN ((new.type = ANY (ARRAY['job.released'::text, 'job.reopened'::text]))) EXECUTE FUNCTION public.worker_records_left();


--
-- Name: jobs worker_records_uncompleted; Type: TRIGGER; Schema: public; Owner: -
--

CREATE TRIGGER worker_records_uncompleted AFTER UPDATE OF status, assignee_id ON public.jobs FOR EACH ROW WHEN (((old.status = 'completed'::text) AND (new.status IS DISTINCT FROM 'completed'::text))) EXECUTE FUNCTION public.worker_records_completed();


--
-- Name: job_applications job_applications_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_applications
    ADD CONSTRAINT job_applications_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: job_declines job_declines_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_declines
    ADD CONSTRAINT job_declines_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: job_events job_events_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_events
    ADD CONSTRAINT job_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: job_offers job_offers_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_offers
    ADD CONSTRAINT job_offers_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: job_races_lost job_races_lost_held_an_offer; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_races_lost
    ADD CONSTRAINT job_races_lost_held_an_offer FOREIGN KEY (job_id, worker_id) REFERENCES public.job_offers(job_id, worker_id);


--
-- Name: jobs jobs_after_photo_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_after_photo_id_fkey FOREIGN KEY (after_photo_id) REFERENCES public.photos(id);


--
-- Name: jobs jobs_before_photo_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.jobs
    ADD CONSTRAINT jobs_before_photo_id_fkey FOREIGN KEY (before_photo_id) REFERENCES public.photos(id);


--
-- Name: offer_events offer_events_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_events
    ADD CONSTRAINT offer_events_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: offer_rounds_resumed offer_rounds_resumed_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_rounds_resumed
    ADD CONSTRAINT offer_rounds_resumed_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id) ON DELETE CASCADE;


--
-- Name: offer_waves offer_waves_job_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.offer_waves
    ADD CONSTRAINT offer_waves_job_id_fkey FOREIGN KEY (job_id) REFERENCES public.jobs(id);


--
-- Name: SCHEMA public; Type: ACL; Schema: -; Owner: -
--

GRANT USAGE ON SCHEMA public TO dispatch_app;
GRANT USAGE ON SCHEMA public TO dispatch_archivist;


--
-- Name: TABLE job_applications; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.job_applications TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.job_applications TO dispatch_archivist;


--
-- Name: COLUMN job_applications.applied_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(applied_at) ON TABLE public.job_applications TO dispatch_app;


--
-- Name: COLUMN job_applications.note; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(note) ON TABLE public.job_applications TO dispatch_app;


--
-- Name: COLUMN job_applications.withdrawn_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(withdrawn_at) ON TABLE public.job_applications TO dispatch_app;


--
-- Name: TABLE job_events; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.job_events TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.job_events TO dispatch_archivist;


--
-- Name: COLUMN job_events.published_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(published_at) ON TABLE public.job_events TO dispatch_app;


--
-- Name: COLUMN job_events.relay_claimed_until; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(relay_claimed_until) ON TABLE public.job_events TO dispatch_app;


--
-- Name: COLUMN job_events.relayed_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(relayed_at) ON TABLE public.job_events TO dispatch_app;


--
-- Name: TABLE offer_events; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.offer_events TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.offer_events TO dispatch_archivist;


--
-- Name: COLUMN offer_events.published_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(published_at) ON TABLE public.offer_events TO dispatch_app;


--
-- Name: COLUMN offer_events.relay_claimed_until; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(relay_claimed_until) ON TABLE public.offer_events TO dispatch_app;


--
-- Name: COLUMN offer_events.relayed_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(relayed_at) ON TABLE public.offer_events TO dispatch_app;


--
-- Name: TABLE jobs; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.jobs TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.jobs TO dispatch_archivist;


--
-- Name: COLUMN jobs.status; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(status) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.version; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(version) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.assignee_id; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(assignee_id) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.lease_expires_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(lease_expires_at) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.updated_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(updated_at) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.before_photo_id; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(before_photo_id) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.after_photo_id; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(after_photo_id) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.rating; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(rating) ON TABLE public.jobs TO dispatch_app;


--
-- Name: COLUMN jobs.choose_by; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(choose_by) ON TABLE public.jobs TO dispatch_app;


--
-- Name: FUNCTION worker_records_add(worker text, completed_by integer, released_by integer, vanished_by integer); Type: ACL; Schema: public; Owner: -
--

REVOKE ALL ON FUNCTION public.worker_records_add(worker text, completed_by integer, released_by integer, vanished_by integer) FROM PUBLIC;


--
-- Name: TABLE idempotency_keys; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE public.idempotency_keys TO dispatch_app;


--
-- Name: COLUMN idempotency_keys.status_code; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(status_code) ON TABLE public.idempotency_keys TO dispatch_app;


--
-- Name: COLUMN idempotency_keys.body; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(body) ON TABLE public.idempotency_keys TO dispatch_app;


--
-- Name: TABLE job_declines; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.job_declines TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.job_declines TO dispatch_archivist;


--
-- Name: TABLE job_offers; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.job_offers TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.job_offers TO dispatch_archivist;


--
-- Name: TABLE job_races_lost; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.job_races_lost TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.job_races_lost TO dispatch_archivist;


--
-- Name: TABLE offer_answers_folded; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,UPDATE ON TABLE public.offer_answers_folded TO dispatch_app;


--
-- Name: TABLE offer_market; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.offer_market TO dispatch_app;


--
-- Name: TABLE offer_market_bands; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.offer_market_bands TO dispatch_app;


--
-- Name: TABLE offer_rounds_resumed; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.offer_rounds_resumed TO dispatch_app;


--
-- Name: TABLE offer_waves; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.offer_waves TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.offer_waves TO dispatch_archivist;


--
-- Name: TABLE photos; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.photos TO dispatch_app;
GRANT SELECT,DELETE ON TABLE public.photos TO dispatch_archivist;


--
-- Name: TABLE push_connections; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE public.push_connections TO dispatch_app;


--
-- Name: TABLE rosters; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,DELETE ON TABLE public.rosters TO dispatch_app;


--
-- Name: COLUMN rosters.list; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(list) ON TABLE public.rosters TO dispatch_app;


--
-- Name: COLUMN rosters.added_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(added_at) ON TABLE public.rosters TO dispatch_app;


--
-- Name: TABLE sweep_duties; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.sweep_duties TO dispatch_app;


--
-- Name: TABLE worker_answers; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT,UPDATE ON TABLE public.worker_answers TO dispatch_app;


--
-- Name: TABLE worker_records; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT ON TABLE public.worker_records TO dispatch_app;


--
-- Name: TABLE workers; Type: ACL; Schema: public; Owner: -
--

GRANT SELECT,INSERT ON TABLE public.workers TO dispatch_app;


--
-- Name: COLUMN workers.skills; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(skills) ON TABLE public.workers TO dispatch_app;


--
-- Name: COLUMN workers.updated_at; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(updated_at) ON TABLE public.workers TO dispatch_app;


--
-- Name: COLUMN workers.ratings; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(ratings) ON TABLE public.workers TO dispatch_app;


--
-- Name: COLUMN workers.stars; Type: ACL; Schema: public; Owner: -
--

GRANT UPDATE(stars) ON TABLE public.workers TO dispatch_app;


--
-- PostgreSQL database dump complete
--
