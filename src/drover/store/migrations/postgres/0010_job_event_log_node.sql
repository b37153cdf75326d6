-- As ../0010_job_event_log_node.sql: the node that writes a job's event log as its owner.
ALTER TABLE jobs ADD COLUMN event_log_node TEXT;
