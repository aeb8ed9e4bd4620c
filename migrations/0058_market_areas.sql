-- The market's curve per area (issue 38, point 5; dispatch.offers.market): one curve per
-- deployment fit a city of near-keen workers and a city of far drivers with one average, and
-- read each city's offers with it. Now the answers are folded by the area of their job, each
-- area with answers has its own curve, and the whole deployment's (fit on every area's answers
-- together) stands where an area has too few of its own.

-- The area of a position: a cell of one degree of latitude by one of longitude (about 110 by
-- 50 to 110 km: it holds a metro, and a deployment has a handful), numbered row * 360 +
-- column, the row counted north from the south pole (the pole itself in the last row) and the
-- column east from 180 W; 0 to 64799. The one rule of which area a job is in (FOLD_ANSWERS,
-- LIKELY_CANDIDATES). -1, never an area of a position, is the deployment as a whole.
CREATE FUNCTION dispatch_market_area(p_lat double precision, p_lng double precision)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT least(floor(p_lat + 90)::integer, 179) * 360 + floor(p_lng + 180)::integer % 360
$$;

-- Both tables are made anew with their area, their rows copied through a temporary table (a
-- row and a few dozen bands; so that each column and constraint is named for what it is, on
-- every Postgres).

-- The curves, one row per area with a fit (offer_market_pkey), and the deployment's under -1
-- (offer_market_area_valid). The one curve there was becomes the deployment's: it stands on
-- the same answers until the next fit replaces it.
CREATE TEMPORARY TABLE offer_market_0042 ON COMMIT DROP AS SELECT * FROM offer_market;
DROP TABLE offer_market;
CREATE TABLE offer_market (
    area            integer PRIMARY KEY,
    door            double precision NOT NULL,
    half_distance_m double precision NOT NULL,
    answers         integer NOT NULL,  -- the answered offers it was fit on
    fitted_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT offer_market_area_valid CHECK (area BETWEEN -1 AND 64799),
    CONSTRAINT offer_market_door_is_a_chance CHECK (door > 0 AND door <= 1),
    CONSTRAINT offer_market_half_distance_positive CHECK (half_distance_m > 0),
    CONSTRAINT offer_market_answers_nonnegative CHECK (answers >= 0)
);
INSERT INTO offer_market (area, door, half_distance_m, answers, fitted_at)
SELECT -1, door, half_distance_m, answers, fitted_at FROM offer_market_0042;
GRANT SELECT, INSERT, UPDATE ON offer_market TO dispatch_app;

-- The answers by area and distance band (offer_market_bands_pkey). The bands folded so far
-- were folded without their area: they are kept under -1, the deployment's, and count in its
-- curve alone (no area's) until they decay away (a day's time constant) like every answer.
CREATE TEMPORARY TABLE offer_market_bands_0048 ON COMMIT DROP AS
SELECT * FROM offer_market_bands;
DROP TABLE offer_market_bands;
CREATE TABLE offer_market_bands (
    area    integer NOT NULL,
    band    integer NOT NULL,
    offers  double precision NOT NULL,
    accepts double precision NOT NULL,
    as_of   timestamptz NOT NULL,
    PRIMARY KEY (area, band),
    CONSTRAINT offer_market_bands_area_valid CHECK (area BETWEEN -1 AND 64799),
    CONSTRAINT offer_market_bands_band_nonnegative CHECK (band >= 0),
    CONSTRAINT offer_market_bands_counts_nonnegative CHECK (offers >= 0 AND accepts >= 0),
    CONSTRAINT offer_market_bands_accepts_within_offers
        CHECK (accepts <= offers * (1 + 1e-9) + 1e-9)  -- slack for float rounding
);
INSERT INTO offer_market_bands (area, band, offers, accepts, as_of)
SELECT -1, band, offers, accepts, as_of FROM offer_market_bands_0048;
GRANT SELECT, INSERT, UPDATE ON offer_market_bands TO dispatch_app;

-- The market's curve the `likely` policy reads an offer of a job in p_area with: the area's,
-- once fit on at least p_min_answers answers; else the deployment's (area -1), once it is;
-- else the configured p_half_m and p_door. Always one row, and planned as one (0054); the
-- area's row and the deployment's are two probes of offer_market's primary key. p_area null
-- (no such job): the deployment's, else the configured. `stands`: whether a fit curve was
-- found (until one is, the market is cold: a `likely` wave is no wider than the seed's).
DROP FUNCTION dispatch_market_curve(double precision, double precision, integer);
CREATE FUNCTION dispatch_market_curve(
    p_area integer, p_half_m double precision, p_door double precision, p_min_answers integer
) RETURNS TABLE (half_m double precision, door double precision, stands boolean)
LANGUAGE sql STABLE PARALLEL SAFE ROWS 1 AS $$
SELECT coalesce(m.half_distance_m, p_half_m), coalesce(m.door, p_door),
       m.half_distance_m IS NOT NULL
  FROM (SELECT) one
  LEFT JOIN LATERAL (SELECT m.half_distance_m, m.door FROM offer_market m
                      WHERE m.area IN (p_area, -1) AND m.answers >= p_min_answers
                      ORDER BY m.area = -1  -- the area's own first
                      LIMIT 1) m ON true
$$;
