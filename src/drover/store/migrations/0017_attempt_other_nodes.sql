-- A parallel job on several nodes (sge_pe(5) allocation rules across hosts): the other nodes
-- of each attempt and the CPUs it holds on each, as [["n2", [0, 1]], ...]; NULL for an attempt
-- on one node. The attempt's `node` is its master, which runs the job script.
ALTER TABLE attempts ADD COLUMN others TEXT;
