-- As ../0019_attempt_pe_tasks.sql: the tasks each attempt started on its hosts.
ALTER TABLE attempts ADD COLUMN pe_tasks TEXT;
