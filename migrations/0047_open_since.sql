-- A worker's offers (offers/sql.py OFFERS_OF_WORKER) read back only as far as the oldest open
-- job: an offer is live only while its job is open, and it was made after its job was posted,
-- so nothing older can be live. The worker's offers are read newest first through
-- job_offers_of_worker down to that moment instead of through every offer it ever had.
CREATE INDEX jobs_open_since ON jobs (created_at) WHERE status = 'open';
