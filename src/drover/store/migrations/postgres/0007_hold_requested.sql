-- As ../0007_hold_requested.sql: a task held while its prolog ran.
ALTER TABLE tasks ADD COLUMN hold_requested BIGINT NOT NULL DEFAULT 0;
