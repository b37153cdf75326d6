-- As ../0022_attempt_after.sql: the attempt a promised attempt follows.
ALTER TABLE attempts ADD COLUMN after TEXT;
