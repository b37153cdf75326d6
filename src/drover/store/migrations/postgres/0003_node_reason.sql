-- As ../0003_node_reason.sql: why a node is in ERROR.
ALTER TABLE nodes ADD COLUMN reason TEXT;
