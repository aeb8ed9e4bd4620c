-- Finer cells for close searches in dense places: resolution 8 (about 0.7 km2) and 9 (about
-- 0.1 km2), so that a search can start at the nearest cells and stop early.
ALTER TABLE jobs
    ADD COLUMN cell_r8 bigint,
    ADD COLUMN cell_r9 bigint;

CREATE INDEX jobs_open_cell_r8 ON jobs (cell_r8) WHERE status = 'open';
CREATE INDEX jobs_open_cell_r9 ON jobs (cell_r9) WHERE status = 'open';
