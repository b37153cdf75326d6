-- A promised attempt's that the controller told its node to start now, in place: the CPU ids it
-- is to start on (a JSON list), until the node says it started; NULL for any other attempt.
ALTER TABLE attempts ADD COLUMN moving_to TEXT;
