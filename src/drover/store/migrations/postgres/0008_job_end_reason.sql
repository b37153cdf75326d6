-- As ../0008_job_end_reason.sql: why the controller ended a job itself.
ALTER TABLE jobs ADD COLUMN end_reason TEXT;
