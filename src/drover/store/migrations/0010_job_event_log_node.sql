-- The node that writes a job's event log as its owner, when the controller cannot (it runs as an
-- unprivileged service user): the node on the host the job was submitted from.
ALTER TABLE jobs ADD COLUMN event_log_node TEXT;
