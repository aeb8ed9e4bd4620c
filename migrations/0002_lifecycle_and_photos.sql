-- The job's life after the claim: photo evidence, and the rules that make it trustworthy.

CREATE TABLE photos (
    id            uuid PRIMARY KEY DEFAULT dispatch_uuid7(),
    owner_id      text NOT NULL,                  -- the worker who asked for the upload
    s3_key        text NOT NULL UNIQUE,
    content_type  text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT photos_content_type_image
        CHECK (content_type IN ('image/jpeg', 'image/png', 'image/heic', 'image/webp'))
);

ALTER TABLE jobs
    ADD COLUMN before_photo_id uuid REFERENCES photos (id),
    ADD COLUMN after_photo_id uuid REFERENCES photos (id),
    -- No work without evidence: in progress needs the before photo, completed needs both.
    ADD CONSTRAINT jobs_photo_gate CHECK (
        (status <> 'in_progress' OR before_photo_id IS NOT NULL)
        AND (status <> 'completed' OR (before_photo_id IS NOT NULL AND after_photo_id IS NOT NULL))),
    -- One picture cannot be both the before and the after.
    ADD CONSTRAINT jobs_photos_differ
        CHECK (before_photo_id IS NULL OR before_photo_id IS DISTINCT FROM after_photo_id);

-- A photo slot is open only while the job is at its stage: the before photo while assigned
-- (it goes with the assignment, so giving the job back clears it), the after photo while in
-- progress. Once the job moved past a slot, the slot is frozen, whoever writes.
CREATE FUNCTION jobs_photo_slots_frozen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.before_photo_id IS DISTINCT FROM OLD.before_photo_id AND OLD.status <> 'assigned' THEN
        RAISE EXCEPTION 'the before photo of job % is frozen in status %', OLD.id, OLD.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_before_photo_frozen';
    END IF;
    IF NEW.after_photo_id IS DISTINCT FROM OLD.after_photo_id AND OLD.status <> 'in_progress' THEN
        RAISE EXCEPTION 'the after photo of job % is frozen in status %', OLD.id, OLD.status
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_after_photo_frozen';
    END IF;
    RETURN NEW;
END
$$;

-- WHEN keeps the trigger off every update that leaves the photos alone (the accept path).
CREATE TRIGGER jobs_photo_slots_frozen
    BEFORE UPDATE ON jobs
    FOR EACH ROW
    WHEN (OLD.before_photo_id IS DISTINCT FROM NEW.before_photo_id
          OR OLD.after_photo_id IS DISTINCT FROM NEW.after_photo_id)
    EXECUTE FUNCTION jobs_photo_slots_frozen();

-- A photo belongs to the worker who created it: only its owner, assigned to the job, can use it.
CREATE FUNCTION jobs_photo_owned_by_assignee() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (NEW.before_photo_id IS DISTINCT FROM OLD.before_photo_id AND NEW.before_photo_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.id = NEW.before_photo_id AND p.owner_id = NEW.assignee_id))
       OR (NEW.after_photo_id IS DISTINCT FROM OLD.after_photo_id AND NEW.after_photo_id IS NOT NULL
            AND NOT EXISTS (SELECT 1 FROM photos p WHERE p.id = NEW.after_photo_id AND p.owner_id = NEW.assignee_id)) THEN
        RAISE EXCEPTION 'a photo of job % does not belong to its assignee', NEW.id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'jobs_photo_owned_by_assignee';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER jobs_photo_owned_by_assignee
    BEFORE UPDATE ON jobs
    FOR EACH ROW
    WHEN (OLD.before_photo_id IS DISTINCT FROM NEW.before_photo_id
          OR OLD.after_photo_id IS DISTINCT FROM NEW.after_photo_id)
    EXECUTE FUNCTION jobs_photo_owned_by_assignee();
