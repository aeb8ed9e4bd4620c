-- Every time the API writes is RFC 3339 in UTC, whose years have four digits. A window given
-- as 9999-12-31T23:59:59-23:59 is in the year 10000 in UTC: it was stored (the job, its event
-- and its key's answer), then every read of it answered 500. The input model refuses such
-- times now (window.start, window.end: 400); the database refuses them too.
--
-- Jobs that slipped in before keep their place in time as near as a four-digit year allows,
-- so that they can be read again (their window's other end is untouched).
UPDATE jobs SET window_end = '9999-12-31 23:59:59.999999+00'
 WHERE window_end >= '10000-01-01 00:00:00+00';
UPDATE jobs SET window_start = '0001-01-01 00:00:00+00'
 WHERE window_start < '0001-01-01 00:00:00+00';

ALTER TABLE jobs ADD CONSTRAINT jobs_window_in_rfc3339 CHECK (
    window_start >= '0001-01-01 00:00:00+00' AND window_end < '10000-01-01 00:00:00+00');
