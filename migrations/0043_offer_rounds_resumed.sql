-- The sweeper's record of the stalled offer rounds it sent on again (issue 34 point 8;
-- dispatch.offers.waves.resume_stalled_rounds): a round is resent once per stall period, not
-- on every pass while its resent wave waits in the queue. A pass that resent every stalled
-- round each time made 100 queue calls a pass and held the leases behind them for 20-36 s.
-- One row per round (a job's version); written only for a send the queue took, so a failed
-- send is tried again on the next pass.
CREATE TABLE offer_rounds_resumed (
    -- Bookkeeping, not history: a job that leaves (the retention duty deletes finished jobs
    -- and the rows it archives) takes its record along instead of being held by it.
    job_id      uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    job_version integer NOT NULL,
    wave        integer NOT NULL,  -- the wave that was sent again
    resumed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, job_version),
    CONSTRAINT offer_rounds_resumed_version_positive CHECK (job_version > 0),
    CONSTRAINT offer_rounds_resumed_wave_nonnegative CHECK (wave >= 0)  -- 0: the favourites'
);
GRANT SELECT, INSERT, UPDATE ON offer_rounds_resumed TO dispatch_app;
