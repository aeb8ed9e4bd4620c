-- Offers in waves. A round of offers starts when a job opens (created, reopened, released) and
-- is named by the job's version at that moment; its waves widen until the job is taken or the
-- last wave has passed. Offers are hints pushed to workers: accept never reads them.

-- One row per wave that ran: a wave message delivered twice (SQS is at least once) finds its
-- row and offers nobody again. Wave numbers past the configured waves are the final check
-- ("still open?" -> job.unfilled).
CREATE TABLE offer_waves (
    job_id       uuid NOT NULL REFERENCES jobs (id),
    job_version  integer NOT NULL,
    wave         integer NOT NULL,
    ran_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, job_version, wave),
    CONSTRAINT offer_waves_wave_positive CHECK (wave > 0),
    CONSTRAINT offer_waves_version_positive CHECK (job_version > 0)
);

CREATE TABLE job_offers (
    id           uuid PRIMARY KEY DEFAULT dispatch_uuid7(),
    job_id       uuid NOT NULL REFERENCES jobs (id),
    worker_id    text NOT NULL,
    job_version  integer NOT NULL,
    wave         integer NOT NULL,
    distance_m   double precision NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    -- Nobody is offered the same job twice, across waves and across rounds.
    CONSTRAINT job_offers_once_per_worker UNIQUE (job_id, worker_id),
    CONSTRAINT job_offers_wave_positive CHECK (wave > 0),
    CONSTRAINT job_offers_distance_nonnegative CHECK (distance_m >= 0)
);

-- Offers are made only while the job is open at the round's version. The row lock (FOR
-- SHARE) makes a concurrent accept and a wave take turns: an accept that commits first leaves
-- the wave nothing to offer (the lock waits, then sees the new row); a wave that locks first
-- makes its offers before the accept's UPDATE can proceed.
CREATE FUNCTION job_offers_only_while_open() RETURNS trigger
LANGUAGE plpgsql AS $$
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

CREATE TRIGGER job_offers_only_while_open BEFORE INSERT ON job_offers
    FOR EACH ROW EXECUTE FUNCTION job_offers_only_while_open();

-- The offer round's own events (`offer.created`, `job.unfilled`). They change nothing on the
-- job (no version bump), so they are not job changes and do not belong in job_events (one row
-- per version); the wave that writes them puts them on the bus itself, straight after commit,
-- and a wave message that is redelivered puts whatever is still unpublished.
CREATE TABLE offer_events (
    id            uuid PRIMARY KEY DEFAULT dispatch_uuid7(),
    job_id        uuid NOT NULL REFERENCES jobs (id),
    type          text NOT NULL,
    version       integer NOT NULL,               -- the job's version: the round
    actor         text NOT NULL DEFAULT 'system',
    occurred_at   timestamptz NOT NULL DEFAULT now(),
    data          jsonb NOT NULL DEFAULT '{}',
    published_at  timestamptz,
    CONSTRAINT offer_events_type_valid CHECK (type IN ('offer.created', 'job.unfilled')),
    CONSTRAINT offer_events_version_positive CHECK (version > 0)
);

-- One job.unfilled per round.
CREATE UNIQUE INDEX offer_events_one_unfilled_per_round
    ON offer_events (job_id, version) WHERE type = 'job.unfilled';

CREATE INDEX offer_events_unpublished ON offer_events (job_id) WHERE published_at IS NULL;
