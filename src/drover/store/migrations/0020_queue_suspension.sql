-- Queue suspension (Grid Engine's qmod -sq): a node's queue instances suspended, as a JSON object
-- of queue → by whom and why; and each task's reasons to be frozen, a comma list of "job" (its
-- own suspend) and "queue" (its queue instance's), kept until its attempt ends.
ALTER TABLE nodes ADD COLUMN suspended_queues TEXT;
ALTER TABLE tasks ADD COLUMN suspended_by TEXT;
-- A task suspended before was suspended on its own.
UPDATE tasks SET suspended_by = 'job' WHERE state = 'suspended';
