-- The bus contract lists every event type (the AsyncAPI document, generated from the models);
-- the database now accepts those and no other, so a new type cannot reach consumers without
-- a migration here and a message there (tests/integration/test_asyncapi.py compares them).
ALTER TABLE job_events DROP CONSTRAINT job_events_type_valid;
ALTER TABLE job_events ADD CONSTRAINT job_events_type_valid CHECK (type IN (
    'job.created', 'job.assigned', 'job.checked_in', 'job.released', 'job.reopened',
    'job.started', 'job.completed', 'job.cancelled', 'job.photo_attached'));
