-- A job's events, pulled (GET /jobs/{job_id}/events): besides its changes, every event of the
-- job that push tells its business (offers, applications, unfilled rounds, back to the
-- business's choice), so that a business that was away pulls what it missed (push is a hint).
-- Through this index, not a scan of every job's offers.
CREATE INDEX offer_events_of_job ON offer_events (job_id, version);
