-- Nearby search through core Postgres's own nearest-neighbour index (GiST on `point`), still
-- without any extension, in place of the H3 cells of 0004 to 0006.
--
-- Each job's place is also kept as a point on the Mercator map (x = longitude, y = the
-- Mercator latitude, both in radians). Mercator is conformal: around any place, distance on
-- the map is ground distance times one scale (1 / cos latitude), the same in every direction.
-- So the index, walked in map distance, visits jobs in very nearly their ground order; the
-- search (dispatch_nearby, below) ranks them by the exact great-circle distance
-- (dispatch_distance_m) and stops once nothing further along the walk could be nearer.

-- The place on the map. Coordinates are snapped to 1e-9 degree first, as the distance does
-- (radians() of a subnormal coordinate underflows, and Postgres raises on underflow). The
-- poles stay finite: tan(pi/2) in floating point is 1.6e16, whose asinh is about 38.
CREATE FUNCTION dispatch_mercator(lat double precision, lng double precision) RETURNS point
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT point(radians(round(lng * 1e9) / 1e9), asinh(tan(radians(round(lat * 1e9) / 1e9))))
$$;

-- The boxes on the map holding every place within reach_m of (lat, lng): the spherical cap's
-- bounding latitudes, and its bounding longitudes where the cap's edge touches its tangent
-- meridians (asin(sin d / cos lat)). A cap reaching over the antimeridian gives two boxes, one
-- each side; a cap holding a pole takes every longitude. A margin of 1e-9 radian (6 mm) keeps
-- rounding from shutting out a place right on the edge; reaches under a millimetre are taken
-- as a millimetre (dividing a subnormal reach by the Earth's radius underflows).
CREATE FUNCTION dispatch_cap(lat double precision, lng double precision, reach_m double precision)
RETURNS box[]
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
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

-- Ground metres per unit of map distance, at least, anywhere within reach_m of latitude lat:
-- the map's scale is R cos(latitude), smallest at the latitude furthest from the equator that
-- the cap reaches. A path of ground length d from (lat, lng) never leaves the cap, so its map
-- length is at most d / floor; a job at map distance m is therefore at least m * floor metres
-- away on the ground. Zero or less where the cap holds a pole (no such floor). Shaved by a
-- part in a billion, so that rounding in the last bits never overstates it.
CREATE FUNCTION dispatch_mercator_floor_m(lat double precision, reach_m double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT (1 - 1e-9) * 6371008.8
         * cos(least(pi() / 2, abs(radians(round(lat * 1e9) / 1e9))
                               + greatest(reach_m, 1e-3) / 6371008.8))
$$;

ALTER TABLE jobs ADD COLUMN mercator point GENERATED ALWAYS AS (dispatch_mercator(lat, lng)) STORED;
-- The nearest-neighbour index of open jobs: walked in map distance (ORDER BY mercator <-> p),
-- within a box (mercator <@ box), in one index scan.
CREATE INDEX jobs_open_mercator ON jobs USING gist (mercator) WHERE status = 'open';

-- Open jobs within radius_m of a point that the worker qualifies for (skills, rating, window
-- still open), nearest first, at most `wanted`: GET /jobs/nearby, exact in great-circle metres.
--
-- The index is walked in map distance from the point, inside the cap's box. Every job of the
-- walk within the radius is kept. The walk stops when the job it has reached is, on the map,
-- so far that on the ground it cannot be nearer than the radius, or than the furthest of the
-- first `wanted` kept (there are then `wanted` jobs at least that near, so nothing further
-- along can be among the nearest). Across the antimeridian the far box is walked too, from
-- the point moved a world's width over (so that its map distances are true ones as well),
-- and stops by the same rule. Near a pole the map has no scale floor: the box is walked whole.
--
-- A function, so that Postgres keeps its plans between calls (nothing is prepared on the
-- session, which RDS Proxy would pin), and so that the walk can stop when it has proved its
-- answer. Sorts and bitmap scans are off inside it: the planner cannot tell how many jobs a
-- box holds (it guesses 0.1% of the table), and at that guess it would read every job in the
-- box and sort them instead of walking the index in order. JIT is off with them: a disabled
-- plan's cost is inflated past JIT's threshold, and compiling would cost far more than the
-- query. (The last query sorts the few jobs kept; it has no other way to, and still does.)
-- The worker's skills and rating are read inside the walk, as sub-selects Postgres runs once
-- and only when a job is in reach: in open country, most searches never need them.
CREATE FUNCTION dispatch_nearby(at_lat double precision, at_lng double precision,
                                radius_m double precision, worker text, wanted integer)
RETURNS TABLE (document json, distance_m double precision)
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET enable_sort = off
SET enable_bitmapscan = off
SET jit = off
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
         WHERE j.status = 'open'
           AND j.mercator <@ cap[side]
           AND j.window_end > now()
           -- The worker's skills and rating, read once and only once a job is in reach.
           AND j.skills <@ coalesce((SELECT w.skills FROM workers w WHERE w.id = worker), '{}')
           AND (j.min_rating IS NULL
                OR j.min_rating <= (SELECT w.rating FROM workers w WHERE w.id = worker))
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

DROP INDEX jobs_open_cell_r7;
DROP INDEX jobs_open_cell_r8;
DROP INDEX jobs_open_cell_r9;
ALTER TABLE jobs DROP COLUMN cell_r7, DROP COLUMN cell_r8, DROP COLUMN cell_r9;
