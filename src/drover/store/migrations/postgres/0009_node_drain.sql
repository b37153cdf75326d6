-- As ../0009_node_drain.sql: a node drained by an operator, and why.
ALTER TABLE nodes ADD COLUMN drain TEXT;
