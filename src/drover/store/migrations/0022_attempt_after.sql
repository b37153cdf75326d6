-- A promised attempt's: the attempt of the same node whose room it was given before that one
-- ended (its node starts it when that one's shepherd is gone); NULL for any other attempt.
ALTER TABLE attempts ADD COLUMN after TEXT;
