-- Submissions by their request key: a client that sends a submission again with the same key
-- (its connection was lost before the answer came) gets the ids the first one got, whichever
-- controller answers, the one that took it after a restart or another after a failover. A row
-- is written in the transaction that adds the submission's jobs. job_ids: the ids it got, as a
-- JSON list. The controller keeps the newest (REMEMBERED_SUBMISSIONS) and prunes the others.
CREATE TABLE submission_keys (
    owner        TEXT NOT NULL,
    request_key  TEXT NOT NULL,
    job_ids      TEXT NOT NULL,
    submitted_at REAL NOT NULL,
    PRIMARY KEY (owner, request_key)
);
CREATE INDEX submission_keys_submitted ON submission_keys (submitted_at);
