-- As ../0002_cleanup_progress.sql: how far each attempt's cleanup got on its node (JSON).
ALTER TABLE attempts ADD COLUMN cleanup TEXT;
