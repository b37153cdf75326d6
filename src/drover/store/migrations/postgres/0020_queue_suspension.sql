-- As ../0020_queue_suspension.sql: a node's queue instances suspended, and each task's reasons.
ALTER TABLE nodes ADD COLUMN suspended_queues TEXT;
ALTER TABLE tasks ADD COLUMN suspended_by TEXT;
UPDATE tasks SET suspended_by = 'job' WHERE state = 'suspended';
