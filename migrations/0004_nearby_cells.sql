-- Nearby search on plain Postgres (no extension): each job carries the H3 cells of its
-- location at three resolutions, computed by the application when the job is created (a
-- location never changes). A search looks up the cells around the point through these
-- partial indexes of open jobs, then filters by exact great-circle distance.
-- Jobs created before this migration have no cells and are not found by nearby search.
ALTER TABLE jobs
    ADD COLUMN cell_r5 bigint,
    ADD COLUMN cell_r6 bigint,
    ADD COLUMN cell_r7 bigint;

CREATE INDEX jobs_open_cell_r5 ON jobs (cell_r5) WHERE status = 'open';
CREATE INDEX jobs_open_cell_r6 ON jobs (cell_r6) WHERE status = 'open';
CREATE INDEX jobs_open_cell_r7 ON jobs (cell_r7) WHERE status = 'open';

-- Exact distance in metres on the mean Earth sphere (haversine); right across the
-- antimeridian and near the poles, where flat approximations fail. hav(x) is written
-- (1 - cos x) / 2 rather than sin(x/2)^2: squaring a tiny sine underflows, and Postgres
-- raises on float underflow (a worker standing 1e-200 degrees off a job would get a 500).
CREATE FUNCTION dispatch_distance_m(lat1 double precision, lng1 double precision,
                                    lat2 double precision, lng2 double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT 2 * 6371008.8 * asin(least(1, sqrt(greatest(0,
           (1 - cos(radians(lat2 - lat1))) / 2
           + cos(radians(lat1)) * cos(radians(lat2)) * (1 - cos(radians(lng2 - lng1))) / 2))))
$$;
