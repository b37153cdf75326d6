-- As ../0016_submission_keys.sql: a submission's request key with the ids it got, written with
-- its jobs, so that a submission sent again gets the first one's ids from any controller.
CREATE TABLE submission_keys (
    owner        TEXT             NOT NULL,
    request_key  TEXT             NOT NULL,
    job_ids      TEXT             NOT NULL,
    submitted_at DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (owner, request_key)
);
CREATE INDEX submission_keys_submitted ON submission_keys (submitted_at);
