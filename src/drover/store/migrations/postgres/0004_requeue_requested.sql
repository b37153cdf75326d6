-- As ../0004_requeue_requested.sql: a running task asked to go back to the queue.
ALTER TABLE tasks ADD COLUMN requeue_requested BIGINT NOT NULL DEFAULT 0;
