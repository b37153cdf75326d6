-- As ../0017_attempt_other_nodes.sql: each attempt's other nodes and its CPUs on each.
ALTER TABLE attempts ADD COLUMN others TEXT;
