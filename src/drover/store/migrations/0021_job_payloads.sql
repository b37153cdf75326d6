-- A job's payload (core/job.py JobPayload): its script, its environment and its staged-in files
-- (JSON), up to megabytes a job, in a table of their own, read only when an attempt's order is
-- made; the working set never holds them. A job stored before keeps its payload in its spec,
-- where the store still reads it.
CREATE TABLE job_payloads (
    job_id      INTEGER PRIMARY KEY,
    script      TEXT    NOT NULL,
    environment TEXT    NOT NULL,
    stage_in    TEXT    NOT NULL
);
-- What each job's payload weighs, which its owner's limit counts while the job is unfinished
-- (max_job_bytes_per_user); NULL for a job stored before: weighed from its spec when loaded.
ALTER TABLE jobs ADD COLUMN payload_bytes INTEGER;
