-- The business's deadline to choose: `choose_by`, set when a choice job with choose_within_s
-- opens to choice (its posting; again when it goes back to choice, migration 0025). When it
-- passes, the lease sweeper assigns the best applicant (auto_pick) or reports the job
-- unfilled (job.unfilled with a reason), once per round (offer_events_one_unfilled_per_round).

ALTER TABLE jobs
    ADD COLUMN choose_by timestamptz,
    ADD CONSTRAINT jobs_choose_by_iff_deadline
        CHECK ((choose_by IS NULL) = (choose_within_s IS NULL));

-- The sweeper's read: open choice jobs by deadline.
CREATE INDEX jobs_choice_due ON jobs (choose_by)
    WHERE status = 'open' AND assignment = 'business_choice';

-- job.unfilled says why: null when the offer waves passed (first come), 'no_applicants' or
-- 'not_chosen' when a choice job's deadline passed; and how many applicants it had then.
ALTER TYPE dispatch_job_unfilled_document
    ADD ATTRIBUTE reason text,
    ADD ATTRIBUTE applicants integer;

GRANT UPDATE (choose_by) ON jobs TO dispatch_app;
