-- How far each attempt's cleanup pipeline got on its node (JSON: done steps, failing step,
-- tries, last error), so `drover show` can say why a job is still COMPLETING.
ALTER TABLE attempts ADD COLUMN cleanup TEXT;
