-- A running task asked to go back to the queue (scontrol requeue, drover requeue): acted on
-- when its attempt reports, like a cancel request.
ALTER TABLE tasks ADD COLUMN requeue_requested INTEGER NOT NULL DEFAULT 0;
