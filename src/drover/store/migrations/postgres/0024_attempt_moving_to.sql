-- As ../0024_attempt_moving_to.sql: the CPUs a promised attempt is told to start in place on.
ALTER TABLE attempts ADD COLUMN moving_to TEXT;
