-- As ../0015_queue_errors.sql: a node's queue instances in error, queue → why (JSON).
ALTER TABLE nodes ADD COLUMN queue_errors TEXT;
