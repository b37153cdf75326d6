-- Why the controller ended a job itself (an internal error while handling it), shown by `drover show`.
ALTER TABLE jobs ADD COLUMN end_reason TEXT;
