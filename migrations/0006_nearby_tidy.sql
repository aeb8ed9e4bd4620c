-- Nearby search settled on resolutions 7 to 9 (walking rings from the nearest); the coarser
-- cells of 0004 are not read by anything.
DROP INDEX jobs_open_cell_r5;
DROP INDEX jobs_open_cell_r6;
ALTER TABLE jobs DROP COLUMN cell_r5, DROP COLUMN cell_r6;

-- The distance again, with coordinates snapped to 1e-9 degree (0.1 mm) first: Postgres raises
-- on float underflow, and radians() of a subnormal coordinate (5e-324) underflows.
CREATE OR REPLACE FUNCTION dispatch_distance_m(lat1 double precision, lng1 double precision,
                                               lat2 double precision, lng2 double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  -- One expression, no FROM and not STRICT (least and greatest are not strict), so that
  -- the planner inlines it into the nearby query instead of calling it per row.
  SELECT 2 * 6371008.8 * asin(least(1, sqrt(greatest(0,
           (1 - cos(radians(round(lat2 * 1e9) / 1e9 - round(lat1 * 1e9) / 1e9))) / 2
           + cos(radians(round(lat1 * 1e9) / 1e9)) * cos(radians(round(lat2 * 1e9) / 1e9))
             * (1 - cos(radians(round(lng2 * 1e9) / 1e9 - round(lng1 * 1e9) / 1e9))) / 2))))
$$;
