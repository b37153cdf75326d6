-- A node drained by an operator, and why: kept across the node's disconnects and restarts (as
-- Slurm keeps DRAIN), until `drover node resume`.
ALTER TABLE nodes ADD COLUMN drain TEXT;
