-- As ../0021_job_payloads.sql: a job's script, environment and staged-in files, in a table of
-- their own, read only when an attempt's order is made; and what they weigh, with the job.
CREATE TABLE job_payloads (
    job_id      BIGINT PRIMARY KEY,
    script      TEXT   NOT NULL,
    environment TEXT   NOT NULL,
    stage_in    TEXT   NOT NULL
);
ALTER TABLE jobs ADD COLUMN payload_bytes BIGINT;
